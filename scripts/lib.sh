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

# Builds the herald that ships (the .deb and the container image): release, the Swift runtime linked in (Swift
# is not a Debian package), no $ORIGIN rpath (its directory holds no libraries), immediate binding; then a copy
# stamped with the commit (HERALD_COMMIT, else git's) and the build date (SOURCE_DATE_EPOCH, else now) that
# `herald --version` prints (Sources/System/CBuildInfo). Build output goes to stderr; prints the stamped copy's path.
build_shipped_herald() {
    swift build -c release --product herald --static-swift-stdlib --disable-local-rpath \
        -Xlinker -z -Xlinker now >&2 || return 1
    local bin commit built
    bin=$(swift build -c release --show-bin-path)
    commit=${HERALD_COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
    built=$(date -u -d "@${SOURCE_DATE_EPOCH:-$(date +%s)}" +%Y-%m-%dT%H:%M:%SZ)
    mkdir -p "$bin/shipped"
    # The slot: 128 bytes from its marker, the text NUL-padded after it. grep and dd only: the Dockerfile's
    # build stage (swift:6.3-bookworm) has no python3.
    local marker="HERALD-BUILD-INFO:" offset text
    offset=$(LC_ALL=C grep -obUa "${marker}commit unknown, built unknown" "$bin/herald" | cut -d: -f1)
    if [ -z "$offset" ] || [ "$(wc -l <<< "$offset")" -ne 1 ]; then
        echo "build_shipped_herald: the build-info slot is not in $bin/herald exactly once" >&2
        return 1
    fi
    text="commit $commit, built $built"
    text=${text:0:$((127 - ${#marker}))}
    cp "$bin/herald" "$bin/shipped/herald.tmp"
    { printf '%s' "$text"; head -c $((128 - ${#marker} - ${#text})) /dev/zero; } \
        | dd of="$bin/shipped/herald.tmp" bs=1 seek=$((offset + ${#marker})) conv=notrunc status=none
    chmod 0755 "$bin/shipped/herald.tmp"
    mv "$bin/shipped/herald.tmp" "$bin/shipped/herald"
    echo "$bin/shipped/herald"
}

# Starts a throwaway Redis Cluster of N masters (default 3), no replicas, on free loopback ports (each with its
# own bus port), joined with `redis-cli --cluster create`, and waits (deadline 30 s) for cluster_state:ok on
# every node. Sets CLUSTER_PORTS (space-separated), CLUSTER_PIDS, CLUSTER_DIR and CLUSTER_SEED_URL.
# Stop it with stop_redis_cluster (by pid, never by name).
start_redis_cluster() {
    local masters=${1:-3} i port bus
    CLUSTER_DIR=$(mktemp -d -t herald-cluster.XXXXXX)
    CLUSTER_PORTS=""
    CLUSTER_PIDS=""
    for ((i = 0; i < masters; i++)); do
        port=$(free_port)
        bus=$(free_port)
        mkdir -p "$CLUSTER_DIR/$port"
        redis-server --port "$port" --cluster-port "$bus" --bind 127.0.0.1 --cluster-enabled yes \
            --cluster-config-file "$CLUSTER_DIR/$port/nodes.conf" --cluster-node-timeout 1000 \
            --save '' --appendonly no --dir "$CLUSTER_DIR/$port" --daemonize no --logfile "$CLUSTER_DIR/$port/redis.log" &
        CLUSTER_PIDS="$CLUSTER_PIDS $!"
        CLUSTER_PORTS="$CLUSTER_PORTS $port"
    done
    local deadline=$((SECONDS + 10)) nodes=""
    for port in $CLUSTER_PORTS; do
        until redis-cli -p "$port" ping >/dev/null 2>&1; do
            if ((SECONDS > deadline)); then echo "cluster node $port did not start" >&2; return 1; fi
            sleep 0.1
        done
        nodes="$nodes 127.0.0.1:$port"
    done
    # shellcheck disable=SC2086
    if ! redis-cli --cluster create $nodes --cluster-replicas 0 --cluster-yes >"$CLUSTER_DIR/create.log" 2>&1; then
        echo "redis-cli --cluster create failed:" >&2
        cat "$CLUSTER_DIR/create.log" >&2
        return 1
    fi
    deadline=$((SECONDS + 30))
    for port in $CLUSTER_PORTS; do
        until redis-cli -p "$port" cluster info 2>/dev/null | grep -q 'cluster_state:ok'; do
            if ((SECONDS > deadline)); then echo "cluster node $port never reached cluster_state:ok" >&2; return 1; fi
            sleep 0.1
        done
    done
    CLUSTER_PORTS=${CLUSTER_PORTS# }
    CLUSTER_SEED_URL="redis://127.0.0.1:${CLUSTER_PORTS%% *}"
}

stop_redis_cluster() {
    local pid
    for pid in ${CLUSTER_PIDS:-}; do kill -9 "$pid" 2>/dev/null || true; done
    for pid in ${CLUSTER_PIDS:-}; do wait "$pid" 2>/dev/null || true; done
    CLUSTER_PIDS=""
    [ -n "${CLUSTER_DIR:-}" ] && rm -rf "$CLUSTER_DIR"
    CLUSTER_DIR=""
}
