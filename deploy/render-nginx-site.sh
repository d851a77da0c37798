#!/bin/sh
# Write the nginx site for Cobblestone from the environment file:
#   deploy/render-nginx-site.sh /etc/cobblestone/cobblestone.env > /etc/nginx/sites-available/cobblestone
# Only the template's ${UPPER_CASE} names are replaced (nginx's own $variables are lower
# case and stay as they are); a name the environment file does not set is an error.
set -eu
env_file=${1:?usage: render-nginx-site.sh ENV_FILE [TEMPLATE]}
template=${2:-$(dirname "$0")/nginx/cobblestone.conf}
case "$env_file" in */*) ;; *) env_file=./$env_file ;; esac
set -a
. "$env_file"
set +a
names=$(grep -o '\${[A-Z][A-Z0-9_]*}' "$template" | sort -u | tr -d '${}')
for name in $names; do
    eval "value=\${$name:-}"
    if [ -z "$value" ]; then
        echo "render-nginx-site.sh: $name is not set in $env_file" >&2
        exit 1
    fi
done
exec envsubst "$(printf '${%s} ' $names)" < "$template"
