#!/bin/sh
# Like the official redis image: redis-server runs as the redis user and, with no password set,
# without protected mode (the container network is the boundary).
set -eu
if [ "${1#-}" != "$1" ]; then set -- redis-server "$@"; fi
if [ "$1" = redis-server ]; then
  set -- "$@" --protected-mode no
  if [ "$(id -u)" = 0 ]; then exec setpriv --reuid redis --regid redis --init-groups "$@"; fi
fi
exec "$@"
