# Sourced by tests that start `htamerge serve --listen 127.0.0.1:0 2>ERRFILE`.
# serve_port ERRFILE [TRIES]: prints the port the server announced on
# ERRFILE ("... http://127.0.0.1:PORT/"), waiting up to TRIES x 0.1 s
# (default 100); returns 1 when none came.
serve_port() {
    local err=$1 tries=${2:-100} port
    for _ in $(seq "$tries"); do
        port=$(sed -n 's|.*http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$err" 2>/dev/null)
        [ -n "$port" ] && { echo "$port"; return 0; }
        sleep 0.1
    done
    return 1
}
