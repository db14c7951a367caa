import Foundation
import HeraldProviders
import HeraldTestSupport
import Testing
import APNs
import Simulators
import Worker

/// The compose files and the Dockerfile checked statically: they parse, docker-compose accepts them, and every
/// image, command, flag and file they name exists. scripts/container-test builds and runs them with podman.
@Suite struct ComposeFileTests {
    /// Checks every service built from the Dockerfile: a herald command with flags herald accepts, and every file
    /// it names (in its command or as HERALD_CONFIG) present in the directory mounted there. Returns the services.
    @discardableResult
    static func checkHeraldServices(_ file: String) throws -> [String: [String: Any]] {
        let document = try DeployFiles.yamlObject(file)
        let raw = try #require(document["services"] as? [String: Any], "\(file) has no services")
        var services: [String: [String: Any]] = [:]
        for (name, value) in raw {
            let service = try #require(value as? [String: Any], "service \(name) of \(file)")
            services[name] = service
            guard service["build"] != nil else {
                #expect(service["image"] as? String != nil, "service \(name) of \(file) names no image")
                continue
            }
            #expect(service["build"] as? String == ".", "service \(name) of \(file) should build the repository's Dockerfile")
            let command = try #require(service["command"] as? [String], "service \(name) of \(file) has a command list")
            try DeployFiles.expectHeraldCommand(command, "service \(name) of \(file)")
            // Mounted directories of the repository: container path -> repository path.
            var mounts: [(container: String, local: String)] = []
            for volume in service["volumes"] as? [String] ?? [] {
                let parts = volume.split(separator: ":").map(String.init)
                guard parts.count >= 2, parts[0].hasPrefix("./") else { continue }
                let local = String(parts[0].dropFirst(2))
                #expect(DeployFiles.exists(local), "\(parts[0]) mounted by \(name) of \(file) does not exist")
                mounts.append((parts[1], local))
            }
            let environment = service["environment"] as? [String: String] ?? [:]
            let named = command.filter { $0.hasPrefix("/") } + [environment["HERALD_CONFIG"]].compactMap { $0 }
            for container in named {
                guard let mount = mounts.first(where: { container.hasPrefix($0.container + "/") }) else { continue }
                let local = mount.local + container.dropFirst(mount.container.count)
                #expect(DeployFiles.exists(local), "\(container) of service \(name) of \(file) is not \(local) in the repository")
            }
        }
        return services
    }

    @Test func demoComposeFileNamesServicesImagesAndCommandsThatExist() throws {
        let services = try Self.checkHeraldServices("docker-compose.yml")
        #expect(Set(services.keys).isSuperset(of: ["redis", "mock-apns", "mock-fcm", "mock-webpush", "worker-1", "worker-2", "enqueue",
                                                   "enqueue-webpush"]))
        #expect(services.values.filter { ($0["command"] as? [String])?.first == "worker" }.count == 2)
    }

    /// The demo's Web Push jobs: every fate rule matches subscriptions the simulator mints, the jobs file it
    /// writes is the one enqueue-webpush reads, and their app is the configuration's Web Push app, trusting the
    /// CA the simulator generates.
    @Test func demoWebPushJobsHaveFatesAnAppAndTheSimulatorsCA() throws {
        let services = try Self.checkHeraldServices("docker-compose.yml")
        let command = try #require(services["mock-webpush"]?["command"] as? [String])
        func values(_ flag: String) -> [String] { command.indices.filter { command[$0] == flag && $0 + 1 < command.count }.map { command[$0 + 1] } }
        let minted = values("--mint").compactMap { $0.split(separator: ":").first.map(String.init) }
        let faults = try MockWebPushFaultScript.load(file: DeployFiles.path("examples/mock-webpush-faults.json"))
        #expect(faults.rules.count >= 3)
        for rule in faults.rules { #expect(minted.contains(rule.subscriptionPrefix ?? ""), "no subscriptions minted for \(rule)") }
        #expect(minted.contains { prefix in !faults.rules.contains { $0.subscriptionPrefix == prefix } }, "no deliverable subscriptions")
        let jobsFile = try #require(values("--jobs-file").first)
        #expect(services["enqueue-webpush"]?["command"] as? [String] == ["enqueue", "--file", jobsFile])
        let configuration = try ConfigurationLoader.load(path: DeployFiles.path("examples/compose.json"), environment: [:])
        let app = try #require(configuration.apps.first { $0.name == values("--jobs-app").first })
        #expect(app.platform == .webpush)
        let tlsDirectory = try #require(values("--generate-tls").first)
        #expect(configuration.webPush.caFile == tlsDirectory + "/ca.pem")
    }

    @Test func apnsComposeFileRunsWorkersWithoutTheSimulator() throws {
        let services = try Self.checkHeraldServices("docker-compose.apns.yml")
        #expect(Set(services.keys) == ["redis", "worker", "tail"])
        for (name, service) in services {
            #expect(service["network_mode"] == nil, "\(name) must not borrow another service's network")
            let command = service["command"] as? [String] ?? []
            #expect(!command.contains("mock-apns"), "\(name) runs the simulator")
            let dependencies: [String] = (service["depends_on"] as? [String: Any]).map { Array($0.keys) } ?? (service["depends_on"] as? [String] ?? [])
            #expect(dependencies.allSatisfy { $0 == "redis" }, "\(name) depends on \(dependencies)")
        }
        let worker = try #require(services["worker"])
        #expect(worker["restart"] as? String == "unless-stopped")
        // Its configuration: Apple's hosts, Redis by service name, the key under the mounted keys directory.
        let configuration = try ConfigurationLoader.load(path: DeployFiles.path("deploy/docker/herald.json"), environment: [:])
        #expect(configuration.apns.productionURL == "https://api.push.apple.com:443")
        #expect(configuration.redis.url == "redis://redis:6379/0")
        let keyFile = try #require(configuration.apps.first?.token?.keyFile)
        #expect(keyFile.hasPrefix("/etc/herald/keys/"))
        #expect(DeployFiles.exists("deploy/docker/keys"), "the keys directory the compose file mounts")
        // Stop grace above the drain the worker may take (shutdown deadline plus two Redis command timeouts).
        let grace = try #require((worker["stop_grace_period"] as? String).flatMap { Int($0.dropLast()) })
        #expect(grace > configuration.worker.shutdownDeadlineSeconds + 2 * configuration.redis.commandTimeoutMs / 1000)
    }

    @Test(.enabled(if: which("docker-compose") != nil, "docker-compose (Debian's package) is not installed"))
    func composeFilesValidateWithDockerCompose() throws {
        let compose = try #require(which("docker-compose"))
        for file in ["docker-compose.yml", "docker-compose.apns.yml"] {
            let result = try DeployFiles.run(compose, ["--project-directory", DeployFiles.root.path, "-f", DeployFiles.path(file), "config", "-q"])
            #expect(result.status == 0, "docker-compose config rejects \(file): \(result.text)")
        }
    }

    @Test func dockerfileCopiesFilesThatExistAndRunsHeraldAsANonRootUser() throws {
        let text = try String(contentsOfFile: DeployFiles.path("Dockerfile"), encoding: .utf8)
        let ignore = try String(contentsOfFile: DeployFiles.path(".dockerignore"), encoding: .utf8)
        let allowed = ignore.split(separator: "\n").filter { $0.hasPrefix("!") }.map { String($0.dropFirst()) }
        #expect(ignore.split(separator: "\n").contains("*"), ".dockerignore should exclude everything not named (.build is huge)")
        var copiedTo: [String] = []
        for line in text.split(separator: "\n") where line.hasPrefix("COPY ") {
            let words = line.split(separator: " ").map(String.init)
            copiedTo.append(words.last!)
            if words.contains(where: { $0.hasPrefix("--from=") }) { continue }
            for source in words.dropFirst().dropLast() {
                #expect(DeployFiles.exists(source), "COPY \(source): not in the repository")
                #expect(allowed.contains { source == $0 || source.hasPrefix($0 + "/") }, "COPY \(source) is excluded by .dockerignore")
            }
        }
        let image = try DeployFiles.dockerImage()
        #expect(copiedTo.contains(image.binary), "the ENTRYPOINT \(image.binary) is not what the runtime stage copies")
        try DeployFiles.expectHeraldCommand(image.command, "the Dockerfile's CMD")
        // The HEALTHCHECK asks the worker's /healthz with curl, which the runtime stage installs (scripts/container-test
        // runs it with `podman healthcheck run`).
        #expect(image.healthcheck.first == "/bin/sh" && image.healthcheck.last?.contains("curl") == true
                && image.healthcheck.last?.contains("/healthz") == true, "HEALTHCHECK \(image.healthcheck)")
        // Every library the binary links (the package's Depends) is installed in the runtime stage, and its -dev
        // package in the build stage: without libcurl4 the image's herald exited 127.
        let stages = text.components(separatedBy: "\nFROM ")
        let runtime = try #require(stages.last)
        let build = try #require(stages.first { $0.contains("AS build") })
        for library in ["libhiredis0.14", "libnghttp2-14", "libssl3", "libcurl4", "curl", "ca-certificates"] {
            #expect(runtime.contains(" \(library) ") || runtime.contains(" \(library)\n"), "the runtime stage does not install \(library)")
        }
        for library in ["libhiredis-dev", "libnghttp2-dev", "libssl-dev", "libcurl4-openssl-dev"] {
            #expect(build.contains(library), "the build stage does not install \(library)")
        }
        let uid = try #require(Int(image.user.split(separator: ":").first ?? ""), "USER should be a numeric uid")
        #expect(uid != 0)
        #expect(text.contains("--uid \(uid)"), "the runtime stage should create the user it runs as")
        let config = try #require(image.environment["HERALD_CONFIG"])
        #expect(copiedTo.contains(config), "HERALD_CONFIG \(config) is not in the image")
    }

    @Test func composeConfigurationLoads() throws {
        let configuration = try ConfigurationLoader.load(path: DeployFiles.path("examples/compose.json"), environment: [:])
        #expect(configuration.apps.map(\.name) == ["demo", "demo-android", "demo-web"])
        #expect(configuration.apps.map(\.platform) == [.apns, .fcm, .webpush])
        #expect(configuration.redis.url == "redis://redis:6379/0")
        // "A full example": every kind of credential, FCM, metrics and a queue's own retry policy.
        let example = try ConfigurationLoader.load(path: DeployFiles.path("examples/herald.json"), environment: [:])
        #expect(example.apps.count == 3)
        #expect(example.apps.contains { $0.token != nil } && example.apps.contains { $0.certificate != nil } && example.apps.contains { $0.fcm != nil })
        #expect(!example.queueRetry.isEmpty && example.metrics.listen != Configuration.MetricsSettings().listen)
        let packaged = try ConfigurationLoader.load(path: DeployFiles.path("deploy/debian/herald.json"), environment: [:])
        #expect(packaged.apps.first?.token?.keyFile.hasPrefix("/etc/herald/keys/") == true)
    }
}
