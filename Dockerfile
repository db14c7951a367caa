# The Herald worker image. Build: docker build -t herald .
# One binary serves every role: worker, scheduler, enqueue, mock-apns, tail, stats.
FROM swift:6.3-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends libhiredis-dev libnghttp2-dev libssl-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
COPY Sources ./Sources
COPY Tests ./Tests
RUN swift build -c release --product herald && cp "$(swift build -c release --show-bin-path)/herald" /herald

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends libhiredis0.14 libnghttp2-14 libssl3 ca-certificates \
        libcurl4 libxml2 tzdata \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/lib/swift/linux/*.so /usr/lib/swift/linux/
# The static Foundation/Dispatch runtime the binary links against.
COPY --from=build /herald /usr/local/bin/herald
COPY examples /etc/herald/examples
ENV LD_LIBRARY_PATH=/usr/lib/swift/linux
USER nobody
ENTRYPOINT ["/usr/local/bin/herald"]
CMD ["worker", "--config", "/etc/herald/herald.json"]
