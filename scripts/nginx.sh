#!/usr/bin/env bash
# Unpacks Debian's nginx binary into .cache/nginx (apt-get download + dpkg -x: nothing installed,
# no service started), where tests/test_proxy_config.py runs `nginx -t` on the reverse-proxy
# configuration of docs/deployment.md. Does nothing when nginx is on the PATH or already unpacked;
# without apt-get the test checks the configuration against the server's settings only.
set -euo pipefail
cd "$(dirname "$0")/.."
if command -v nginx >/dev/null || [ -x .cache/nginx/usr/sbin/nginx ]; then
  exit 0
fi
command -v apt-get >/dev/null || { echo "scripts/nginx.sh: no apt-get; nginx -t will be skipped" >&2; exit 0; }
mkdir -p .cache/nginx/deb
( cd .cache/nginx/deb && apt-get download -qq nginx 2>/dev/null ) || { echo "scripts/nginx.sh: could not download nginx" >&2; exit 0; }
dpkg -x .cache/nginx/deb/nginx_*.deb .cache/nginx
