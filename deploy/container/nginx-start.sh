#!/bin/sh
# The nginx image's entrypoint: writes the site of deploy/nginx/cobblestone.conf from the
# environment (deploy/render-nginx-site.sh) and runs nginx in the foreground. With the files
# NGINX_TLS_CERTIFICATE and NGINX_TLS_CERTIFICATE_KEY present (a mounted certificate), the site
# is the Debian one: HTTPS, and port 80 redirecting to it. Without them it is served on plain
# HTTP on NGINX_LISTEN_HTTP, for a trial or behind another TLS proxy.
# `nginx-start.sh --print-site` prints the site and exits (the tests check it with nginx -t).
set -eu
here=$(dirname "$0")
# In the image the template and the renderer lie beside this script; in a checkout, in deploy/.
render=$here/render-nginx-site.sh
template=$here/cobblestone.conf
[ -f "$template" ] || { render=$here/../render-nginx-site.sh; template=$here/../nginx/cobblestone.conf; }
: "${NGINX_TLS_CERTIFICATE:=/etc/cobblestone/tls/fullchain.pem}"
: "${NGINX_TLS_CERTIFICATE_KEY:=/etc/cobblestone/tls/privkey.pem}"
export NGINX_TLS_CERTIFICATE NGINX_TLS_CERTIFICATE_KEY

site() {
    rendered=$(sh "$render" /dev/null "$template")
    if [ -f "$NGINX_TLS_CERTIFICATE" ] && [ -f "$NGINX_TLS_CERTIFICATE_KEY" ]; then
        echo "nginx-start: TLS with $NGINX_TLS_CERTIFICATE" >&2
        printf '%s\n' "$rendered"
    else
        echo "nginx-start: no certificate at $NGINX_TLS_CERTIFICATE: plain HTTP on port $NGINX_LISTEN_HTTP" >&2
        # The port-80 server (a redirect) goes; the HTTPS server listens on plain HTTP instead.
        printf '%s\n' "$rendered" | sed \
            -e '/^# Port 80:/,/^}/d' \
            -e "s/^\( *listen \)$NGINX_LISTEN_HTTPS ssl http2;/\1$NGINX_LISTEN_HTTP;/" \
            -e '/^ *ssl_/d'
    fi
}

if [ "${1:-}" = "--print-site" ]; then
    site
    exit 0
fi
site > /etc/nginx/conf.d/cobblestone.conf
nginx -t -q
exec nginx -g 'daemon off;'
