# Shared shell helpers for scripts/*: sourced, not run.
export PATH="/opt/swift/usr/bin:$PATH"

# A free TCP port on loopback, chosen by the kernel.
free_port() {
    /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# Starts a throwaway redis-server on a free loopback port with no persistence files left behind.
# Sets REDIS_PID, REDIS_PORT, REDIS_DIR. Stop it with stop_redis (by pid, never by name).
start_redis() {
    REDIS_PORT=$(free_port)
    REDIS_DIR=$(mktemp -d -t herald-redis.XXXXXX)
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$REDIS_DIR" \
        --daemonize no --logfile "$REDIS_DIR/redis.log" &
    REDIS_PID=$!
    local deadline=$((SECONDS + 10))
    until redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1; do
        if ((SECONDS > deadline)) || ! kill -0 "$REDIS_PID" 2>/dev/null; then
            echo "redis-server did not start; log:" >&2
            cat "$REDIS_DIR/redis.log" >&2 || true
            return 1
        fi
        sleep 0.1
    done
}

stop_redis() {
    if [ -n "${REDIS_PID:-}" ]; then
        kill "$REDIS_PID" 2>/dev/null || true
        local deadline=$((SECONDS + 10))
        while kill -0 "$REDIS_PID" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
        kill -9 "$REDIS_PID" 2>/dev/null || true
        wait "$REDIS_PID" 2>/dev/null || true
        REDIS_PID=""
    fi
    [ -n "${REDIS_DIR:-}" ] && rm -rf "$REDIS_DIR"
    REDIS_DIR=""
}

# Builds the herald that ships (the .deb and the Docker image): release, the Swift runtime linked in (Swift is
# not a Debian package), no $ORIGIN rpath (its directory holds no libraries), immediate binding. Build output
# goes to stderr; prints the binary's path.
build_shipped_herald() {
    swift build -c release --product herald --static-swift-stdlib --disable-local-rpath \
        -Xlinker -z -Xlinker now >&2
    echo "$(swift build -c release --show-bin-path)/herald"
}
