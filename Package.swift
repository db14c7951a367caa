// swift-tools-version:6.0
import Foundation
import PackageDescription

/// One package, no package dependencies: the C libraries come from Debian as system-library targets.
let package = Package(
    name: "Herald",
    platforms: [.macOS(.v15)],  // Synchronization.Mutex and Atomic; Linux is the target
    products: [
        .executable(name: "herald", targets: ["herald"]),
        .executable(name: "herald-bench", targets: ["HeraldBench"]),
        .library(name: "APNs", targets: ["APNs"]),
        .library(name: "FCM", targets: ["FCM"]),
        .library(name: "HMS", targets: ["HMS"]),
        .library(name: "Expo", targets: ["Expo"]),
        .library(name: "Simulators", targets: ["Simulators"]),
    ],
    targets: [
        .systemLibrary(name: "CLinux", path: "Sources/System/CLinux"),
        .systemLibrary(
            name: "CHiredis", path: "Sources/System/CHiredis", pkgConfig: "hiredis",
            providers: [.apt(["libhiredis-dev"])]),
        .systemLibrary(
            name: "CNghttp2", path: "Sources/System/CNghttp2", pkgConfig: "libnghttp2",
            providers: [.apt(["libnghttp2-dev"])]),
        .systemLibrary(
            name: "COpenSSL", path: "Sources/System/COpenSSL", pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]),
        /// libcurl, for plain HTTPS calls outside the HTTP/2 pools (OAuth token exchange, webhooks).
        .systemLibrary(
            name: "CCurl", path: "Sources/System/CCurl", pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]),
        /// zlib, for the Expo simulator's gzip request bodies (Expo's SDKs gzip large ones).
        .systemLibrary(
            name: "CZlib", path: "Sources/System/CZlib", pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]),

        /// Small pure helpers with no dependencies, one home each: FIFO, JSON escaping, decimal writing, locks, argument parsing.
        .target(name: "Basics", path: "Sources/Base/Basics"),
        /// The commit and build date `herald --version` prints, stamped into the linked binary (scripts/lib.sh).
        /// DWARF 4: clang's default DWARF 5 (.debug_str_offsets, .debug_addr) makes valgrind 3.19's debuginfo reader
        /// give up on the whole binary, and scripts/callgrind-worker counts instructions under valgrind.
        .target(name: "CBuildInfo", path: "Sources/System/CBuildInfo", cSettings: [.unsafeFlags(["-gdwarf-4"])]),
        .target(name: "Reactor", dependencies: ["CLinux", "Basics"], path: "Sources/Base/Reactor"),
        /// One declaration per setting (`Setting<Root>`: key, bounds, default, meaning, environment override) and the
        /// reader that applies them to a JSON object: the worker's file, each provider's section and credential
        /// block, and the simulators' flags and JSON. Below everything that has settings.
        .target(name: "Settings", dependencies: ["Basics"], path: "Sources/Base/Settings"),
        /// What every push provider shares, with no provider in it: the job model and its parser, the JSON scanner and
        /// writer, retry settings, `DeliveryResult` and the neutral `OutcomePolicy`, and `ProviderAnswer` (a provider's
        /// answer as the core reads it).
        .target(name: "PushCore", dependencies: ["COpenSSL", "Basics"], path: "Sources/Core/PushCore"),
        /// What a provider stands on, below the worker and above the HTTP/2 pool: the `PushProvider` seam and its
        /// neutral admission, the `PushSender` port and its types, the configuration's data (`Configuration`, its
        /// apps, each provider's section and credential block kept by key), `AppCredentials`, `Logger`, the pools'
        /// metric lines, `ConfigurationError`, and the shared OAuth access-token cache. Apart from PushCore so the
        /// job model stays pure (no pools, threads or libcurl).
        .target(name: "ProviderKit", dependencies: ["PushCore", "Settings", "HTTP2", "Reactor", "TLS", "CurlHTTP", "Basics"], path: "Sources/Core/ProviderKit"),
        /// APNs: Apple's protocol (reasons, validation, ES256 provider tokens, broadcast channels), its answers'
        /// classes, its settings and credential, its HTTP/2 clients (`APNsClient`, `APNsChannelClient`), its sender,
        /// its `APNsProvider` and `ChannelManager` (`herald channels`).
        .target(name: "APNs", dependencies: ["PushCore", "ProviderKit", "HTTP2", "Reactor", "TLS", "COpenSSL", "Basics"], path: "Sources/Providers/APNs"),
        /// FCM HTTP v1: the message validator, the answers and their classes, the service account and its RS256
        /// OAuth assertion, its settings, its access-token grant and its sender.
        .target(name: "FCM", dependencies: ["PushCore", "ProviderKit", "HTTP2", "Reactor", "TLS", "CurlHTTP", "COpenSSL", "Basics"], path: "Sources/Providers/FCM"),
        /// Huawei Push Kit: the message validator, the answers and their classes, the app's client credentials and
        /// their OAuth grant, its settings and its sender (on ProviderKit's shared OAuth-bearer HTTP/2 sender).
        .target(name: "HMS", dependencies: ["PushCore", "ProviderKit", "HTTP2", "Reactor", "CurlHTTP", "Basics"], path: "Sources/Providers/HMS"),
        /// HarmonyOS NEXT (Push Kit v3, scenario-specific messages): its job members and checks, the service account and
        /// its PS256 JWT, its answers' classes (Push Kit's envelope read by `HMS`' decoder) and its sender.
        .target(name: "Harmony", dependencies: ["PushCore", "ProviderKit", "HMS", "HTTP2", "Reactor", "Basics"], path: "Sources/Providers/Harmony"),
        /// The Expo push service: its job (`to` and Expo's message), its tickets' and receipts' classes, its access
        /// token and its batching sender; its second phase (receipts) is ProviderKit's `ReceiptPhase`.
        .target(name: "Expo", dependencies: ["PushCore", "ProviderKit", "HTTP2", "Reactor", "CurlHTTP", "Basics"], path: "Sources/Providers/Expo"),
        /// Web Push (RFC 8030/8291/8292): subscriptions, aes128gcm message encryption, VAPID tokens (pure, OpenSSL only),
        /// its answers' classes and its sender (a pool per push-service origin).
        .target(name: "WebPush", dependencies: ["PushCore", "ProviderKit", "HTTP2", "Reactor", "COpenSSL", "Basics", "CurlHTTP"], path: "Sources/Providers/WebPush"),
        /// TLS over OpenSSL shared by the APNs/FCM connections, Redis and (server side) the simulators: the `SSL_CTX`, one `SSL*` per socket,
        /// non-blocking handshake, read and write steps, and the error texts.
        .target(name: "TLS", dependencies: ["Basics", "Reactor", "COpenSSL"], path: "Sources/Transport/TLS"),
        .target(name: "HTTP2", dependencies: ["Basics", "Reactor", "TLS", "CNghttp2", "COpenSSL"], path: "Sources/Transport/HTTP2"),
        /// The Redis client: RESP, the pipelined loop connection, the blocking client, cluster routing, Sentinel,
        /// the TLS transport. Knows nothing of Herald's queue.
        .target(name: "RedisClient", dependencies: ["Basics", "Reactor", "TLS", "CHiredis"], path: "Sources/Queue/RedisClient"),
        /// Herald's queue on Redis: scripts, leases, results, archive. Re-exports RedisClient.
        .target(name: "RedisQueue", dependencies: ["Basics", "Reactor", "RedisClient"], path: "Sources/Queue/RedisQueue"),
        /// The server side of HTTP/2 over nghttp2 that the simulators and `herald api` share (session callbacks,
        /// answers). Apart from `HTTP2`, the worker's client, so the simulators stay independent of what they check.
        .target(name: "HTTP2Server", dependencies: ["CNghttp2"], path: "Sources/Transport/HTTP2Server"),
        /// The one HTTP/1.1 request parser (pure, fuzzed), below both servers that read requests: `herald api` and the
        /// worker's metrics listener.
        .target(name: "HTTP1", dependencies: ["Basics"], path: "Sources/Transport/HTTP1"),
        .target(name: "Simulators", dependencies: ["Basics", "Settings", "Reactor", "TLS", "HTTP1", "HTTP2Server", "CNghttp2", "COpenSSL", "CZlib"], path: "Sources/Simulators"),
        /// `herald forward`: results and dropped tokens to a webhook (consumer groups, libcurl, HMAC signatures).
        /// Blocking HTTPS POSTs with libcurl (the OAuth token exchange, webhooks): one implementation for both.
        .target(name: "CurlHTTP", dependencies: ["CCurl"], path: "Sources/Transport/CurlHTTP"),
        .target(name: "Forwarder", dependencies: ["Basics", "RedisQueue", "CurlHTTP", "COpenSSL"], path: "Sources/FrontDoors/Forwarder"),
        /// The device registry (docs/devices.md): devices by app, platform and token in Redis beside the queue, their
        /// scripts (register, remove, settle a completion's dropped and delivered tokens, sweep), reads and counts.
        .target(name: "DeviceRegistry", dependencies: ["PushCore", "ProviderKit", "RedisQueue", "Reactor"], path: "Sources/Registry/DeviceRegistry"),
        .target(name: "Worker", dependencies: ["Basics", "CBuildInfo", "PushCore", "ProviderKit", "HTTP1", "HTTP2", "RedisQueue", "DeviceRegistry", "Reactor", "CurlHTTP", "TLS"], path: "Sources/Delivery/Worker"),
        /// `herald api`: the HTTP front door on the Reactor loop (HTTP/1.1 by `HTTP1`'s parser, HTTP/2 by nghttp2's server
        /// session, as the simulators use it), validating with the worker's intake.
        .target(name: "API", dependencies: ["Basics", "PushCore", "Reactor", "RedisQueue", "DeviceRegistry", "Worker", "TLS", "HTTP1", "HTTP2Server", "CNghttp2", "COpenSSL"], path: "Sources/FrontDoors/API"),
        /// The composition root's list of providers (`heraldProviders`), the one place the provider modules meet the
        /// worker, and the loader's entries with it, for `herald`, the tests and the fuzz targets.
        .target(name: "HeraldProviders", dependencies: ["ProviderKit", "Worker", "APNs", "FCM", "HMS", "WebPush", "Harmony", "Expo"], path: "Sources/Tools/HeraldProviders"),
        .executableTarget(name: "herald", dependencies: ["Basics", "Worker", "API", "DeviceRegistry", "TLS", "Forwarder", "PushCore", "Simulators", "HeraldProviders", "APNs", "FCM", "HMS", "WebPush", "Harmony", "Expo", "HTTP2", "RedisQueue", "Reactor", "CLinux"], path: "Sources/Tools/herald"),
        // Benchmark-only helpers driven by scripts/bench; not part of the shipped tool.
        .executableTarget(name: "HeraldBench", dependencies: ["Basics", "Worker", "DeviceRegistry", "PushCore", "ProviderKit", "APNs", "FCM", "WebPush", "HTTP2", "RedisQueue", "Reactor", "TLS"], path: "Sources/Tools/HeraldBench"),

        .target(name: "HeraldTestSupport", dependencies: ["RedisQueue", "PushCore", "ProviderKit", "APNs", "FCM", "Worker", "Simulators"], path: "Tests/HeraldTestSupport"),
        .testTarget(name: "ReactorTests", dependencies: ["Reactor", "Basics", "HeraldTestSupport"]),
        .testTarget(name: "BasicsTests", dependencies: ["Basics"]),
        .testTarget(name: "HTTP1Tests", dependencies: ["HTTP1"]),
        .testTarget(name: "TLSTests", dependencies: ["TLS", "COpenSSL", "Reactor", "HeraldTestSupport"]),
        /// A test target per module, named for it: what the module holds is tested there, with HeraldTestSupport's
        /// shared helpers where a test needs one. The end-to-end worlds (herald processes, Redis, simulators) are WorkerTests'.
        .testTarget(name: "PushCoreTests", dependencies: ["PushCore", "APNs", "FCM", "HeraldProviders", "Basics"]),
        .testTarget(name: "APNsTests", dependencies: ["APNs", "PushCore", "COpenSSL", "HeraldTestSupport"]),
        .testTarget(name: "FCMTests", dependencies: ["FCM", "PushCore", "ProviderKit", "APNs", "COpenSSL", "HeraldTestSupport"]),
        .testTarget(
            name: "HTTP2Tests", dependencies: ["Basics", "HTTP2", "Reactor", "Simulators", "PushCore", "APNs", "HeraldTestSupport"],
            exclude: ["Fixtures"]),
        .testTarget(name: "RedisQueueTests", dependencies: ["RedisQueue", "RedisClient", "DeviceRegistry", "HeraldProviders", "PushCore", "ProviderKit", "Reactor", "TLS", "HeraldTestSupport"]),
        .testTarget(name: "SimulatorsTests", dependencies: ["Simulators", "Reactor", "PushCore", "APNs", "HTTP2", "COpenSSL", "HeraldTestSupport"]),
        .testTarget(name: "APNsClientTests", dependencies: ["Basics", "PushCore", "APNs", "HTTP2", "Simulators", "Reactor", "HeraldTestSupport"]),
        .testTarget(name: "ForwarderTests", dependencies: ["Forwarder", "RedisQueue", "HeraldTestSupport"]),
        .testTarget(name: "HMSTests", dependencies: ["HMS", "PushCore", "ProviderKit", "CurlHTTP", "HeraldTestSupport"]),
        .testTarget(name: "HarmonyTests", dependencies: ["Harmony", "HMS", "PushCore", "ProviderKit", "HTTP2", "Reactor", "Simulators", "HeraldTestSupport", "Worker", "HeraldProviders", "RedisQueue"]),
        .testTarget(name: "ExpoTests", dependencies: ["Expo", "PushCore", "ProviderKit", "Reactor", "Simulators", "RedisQueue", "Worker", "HeraldProviders", "HeraldTestSupport"]),
        .testTarget(name: "WebPushTests", dependencies: ["WebPush", "CurlHTTP", "HTTP2", "PushCore", "ProviderKit", "Reactor", "Simulators", "RedisQueue", "Worker", "HeraldTestSupport"]),
        .testTarget(name: "APITests", dependencies: ["API", "Basics", "DeviceRegistry", "Worker", "FCM", "HMS", "WebPush", "HeraldProviders", "RedisQueue", "Reactor", "HeraldTestSupport"], exclude: ["Fixtures"]),
        .testTarget(name: "WorkerTests", dependencies: ["Basics", "Worker", "DeviceRegistry", "HeraldProviders", "ProviderKit", "CurlHTTP", "Simulators", "PushCore", "APNs", "FCM", "HMS", "WebPush", "Harmony", "HTTP2", "RedisQueue", "Reactor", "TLS", "HeraldTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)

/// Release builds leave out the runtime exclusivity checks (`swift_beginAccess` on class properties and globals the
/// compiler cannot prove): about 5 % of a worker's instructions per delivered job, spread over every loop-confined
/// class (scripts/callgrind-worker). Debug builds keep them, and every test and sanitizer run is a debug build, so a
/// conflicting access still traps there.
for target in package.targets where target.type == .regular || target.type == .executable {
    target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]
}

/// libFuzzer targets (docs/fuzzing.md), declared only when scripts/fuzz sets HERALD_FUZZ=1 so ordinary builds never
/// see them. Every directory under Fuzz/Targets is one target that may use any module: adding one is adding a file.
if Context.environment["HERALD_FUZZ"] == "1" {
    let root = Context.packageDirectory + "/Fuzz/Targets"
    let names = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
    package.targets.append(.target(name: "FuzzSupport", path: "Fuzz/Support"))
    for name in names {
        package.targets.append(.executableTarget(
            name: name, dependencies: ["FuzzSupport", "API", "HTTP1", "PushCore", "APNs", "FCM", "WebPush", "RedisClient", "RedisQueue", "Simulators", "Worker", "HeraldProviders", "HeraldTestSupport"], path: "Fuzz/Targets/" + name))
        package.products.append(.executable(name: name, targets: [name]))
    }
}
