# The Herald image: docker build -t herald .
# One binary serves every role (worker, scheduler, enqueue, tail, stats, check-config, mock-apns). The default
# command is a worker reading /etc/herald/herald.json: mount your configuration and keys there, e.g.
#   docker run -v /srv/herald:/etc/herald:ro herald
# Not built or run on Herald's build machine (it has no Docker): the binary is the one scripts/package-test
# installs and runs, built by the same build_shipped_herald (scripts/lib.sh).

FROM swift:6.3-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends libhiredis-dev libnghttp2-dev libssl-dev binutils \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
COPY Sources ./Sources
# SwiftPM wants every target of Package.swift present, the test targets included.
COPY Tests ./Tests
COPY scripts/lib.sh ./scripts/lib.sh
RUN bash -c 'source scripts/lib.sh && cp "$(build_shipped_herald)" /herald' \
    && strip --remove-section=.comment --remove-section=.note --strip-unneeded /herald \
    && /herald --version

# Only the binary and the Debian libraries it links (the Swift runtime is inside the binary).
FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends libhiredis0.14 libnghttp2-14 libssl3 libstdc++6 libgcc-s1 ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --user-group --uid 10001 --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin herald
COPY --from=build /herald /usr/bin/herald
# The commented example (the .deb's /etc/herald/herald.json): a mounted configuration replaces it.
COPY deploy/debian/herald.json /etc/herald/herald.json
ENV HERALD_CONFIG=/etc/herald/herald.json
USER 10001:10001
# Herald has no health endpoint yet (issue 12): `herald stats` answers when Redis is reachable with this
# configuration, which is what a worker needs. Switch to /healthz once it exists.
HEALTHCHECK --interval=30s --timeout=10s --start-period=10s --retries=3 CMD ["/usr/bin/herald", "stats"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/bin/herald"]
CMD ["worker"]
