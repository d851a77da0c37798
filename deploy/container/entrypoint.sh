#!/bin/sh
# The app image's entrypoint: one role per container.
#   web       apply migrations once (migrate_locked), set up the periodic tasks, the demo project
#             when COBBLESTONE_DEMO is true, then gunicorn (deploy/gunicorn.conf.py)
#   worker    a Celery worker, once the database has every migration of this image
#   beat      Celery beat, likewise (exactly one per project server)
#   migrate   only the migrations, for an upgrade done by hand
#   manage …  any manage.py command: backup, restore, make_project, createsuperuser, …
# Only the web role migrates, under a PostgreSQL advisory lock, so an upgraded image applies
# its migrations once however many web containers start together; workers and beat wait.
set -eu
# The checkout: /srv/cobblestone in the image.
cd "$(dirname "$0")/../.."
role=${1:-web}
[ $# -gt 0 ] && shift

true_value() {
    case "$(printf '%s' "${1:-}" | tr 'A-Z' 'a-z')" in 1|true|yes|on) return 0 ;; *) return 1 ;; esac
}

wait_for_migrations() {
    # `migrate --check` fails while the database is unreachable or a migration is missing.
    waited=0
    until python manage.py migrate --check >/dev/null 2>&1; do
        if [ "$waited" -ge "${COBBLESTONE_MIGRATE_WAIT:-300}" ]; then
            echo "entrypoint: the database still lacks this image's migrations after ${waited} s" >&2
            exit 1
        fi
        sleep 2
        waited=$((waited + 2))
    done
}

case "$role" in
web)
    if true_value "${COBBLESTONE_MIGRATE:-true}"; then
        python manage.py migrate_locked --wait "${COBBLESTONE_MIGRATE_WAIT:-300}" -v 1
    else
        wait_for_migrations
    fi
    python manage.py setup_periodic_tasks
    if true_value "${COBBLESTONE_DEMO:-false}"; then
        python manage.py seed_demo --if-empty
        python manage.py ensure_admin
    fi
    exec gunicorn -c deploy/gunicorn.conf.py "$@"
    ;;
worker)
    wait_for_migrations
    exec celery -A boincproj worker --loglevel "${LOG_LEVEL:-INFO}" \
        --concurrency "${CELERY_WORKER_CONCURRENCY:-2}" --without-mingle --without-gossip "$@"
    ;;
beat)
    wait_for_migrations
    python manage.py setup_periodic_tasks
    exec celery -A boincproj beat --loglevel "${LOG_LEVEL:-INFO}" "$@"
    ;;
migrate)
    exec python manage.py migrate_locked --wait "${COBBLESTONE_MIGRATE_WAIT:-300}" "$@"
    ;;
manage)
    exec python manage.py "$@"
    ;;
*)
    echo "entrypoint: unknown role '$role' (web, worker, beat, migrate or manage COMMAND)" >&2
    exit 2
    ;;
esac
