# Sourced by the HTTP/2 benchmark scripts: h2load (and nghttpd) from
# Debian's nghttp2 packages, and the 1 MiB upload body in $UPLOAD.
need_nghttp2() {
  if ! command -v h2load >/dev/null 2>&1 || ! command -v nghttpd >/dev/null 2>&1; then
    sudo_if_needed() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
    sudo_if_needed apt-get install -y nghttp2-client nghttp2-server ||
      { sudo_if_needed apt-get update && sudo_if_needed apt-get install -y nghttp2-client nghttp2-server; }
  fi
}
UPLOAD=target/h2-upload-1mib.bin
make_upload() {
  mkdir -p target
  [ -f "$UPLOAD" ] || head -c 1048576 /dev/urandom > "$UPLOAD"
}
