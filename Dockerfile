# The Herald image: docker build -t herald .   (or podman build)
# One binary serves every role (worker, scheduler, dashboard, forward, enqueue, tail, stats, check-config, the
# simulators). The default command is a worker reading /etc/herald/herald.json: mount your configuration and
# keys there, e.g.
#   docker run -v /srv/herald:/etc/herald:ro herald
# The base images are build arguments with the public defaults; scripts/container-test builds this file with
# local stand-ins for both (no registry is reachable there) and runs the image it makes (docs/operations.md).
ARG SWIFT_IMAGE=swift:6.3-bookworm
ARG DEBIAN_IMAGE=debian:bookworm-slim

FROM ${SWIFT_IMAGE} AS build
RUN apt-get update && apt-get install -y --no-install-recommends libhiredis-dev libnghttp2-dev libssl-dev \
        libcurl4-openssl-dev binutils \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
COPY Sources ./Sources
# SwiftPM wants every target of Package.swift present, the test targets included.
COPY Tests ./Tests
COPY scripts/lib.sh ./scripts/lib.sh
ARG HERALD_COMMIT=unknown
RUN bash -c 'source scripts/lib.sh && cp "$(HERALD_COMMIT=$HERALD_COMMIT build_shipped_herald)" /herald' \
    && strip --remove-section=.comment --remove-section=.note --strip-unneeded /herald \
    && /herald --version

# Only the binary and the Debian libraries it links (the Swift runtime is inside the binary); curl for the
# HEALTHCHECK.
FROM ${DEBIAN_IMAGE} AS runtime
RUN apt-get update \
    && apt-get install -y --no-install-recommends libhiredis0.14 libnghttp2-14 libssl3 libcurl4 libstdc++6 libgcc-s1 \
        ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --user-group --uid 10001 --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin herald
COPY --from=build /herald /usr/bin/herald
# The commented example (the .deb's /etc/herald/herald.json): a mounted configuration replaces it.
COPY deploy/debian/herald.json /etc/herald/herald.json
ENV HERALD_CONFIG=/etc/herald/herald.json
# glibc's per-thread cache holds 1,024 freed blocks per size (default 7): 6 % fewer instructions per job
# (docs/operations.md, "Scaling").
ENV GLIBC_TUNABLES=glibc.malloc.tcache_count=1024
USER 10001:10001
# A worker's /healthz (metrics.listen, port 9464 unless HERALD_METRICS_LISTEN names another): answered by the
# event loop that delivers, so a stuck loop fails it. Other roles: the dashboard's is on its --listen port;
# the scheduler serves none (run it with the check disabled).
HEALTHCHECK --interval=30s --timeout=10s --start-period=10s --retries=3 CMD ["/bin/sh", "-c", "listen=${HERALD_METRICS_LISTEN:-:9464}; exec curl -fsS -o /dev/null --max-time 5 http://127.0.0.1:${listen##*:}/healthz"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/bin/herald"]
CMD ["worker"]
