import Foundation
import HeraldProviders
import HeraldTestSupport
import Testing
import Worker

/// No cluster runs here: the example in deploy/kubernetes is parsed and matched against the binary and the
/// image (commands, flags, paths, the user, the version) so that it cannot drift from them unnoticed.
@Suite struct KubernetesManifestTests {
    static let directory = "deploy/kubernetes"

    /// Every object the kustomization lists, by kind and name.
    static func objects() throws -> [String: [String: Any]] {
        let kustomization = try DeployFiles.yamlObject("\(directory)/kustomization.yaml")
        let resources = try #require(kustomization["resources"] as? [String])
        let files = try FileManager.default.contentsOfDirectory(atPath: DeployFiles.path(directory)).filter { $0.hasSuffix(".yaml") && $0 != "kustomization.yaml" }
        #expect(Set(resources) == Set(files), "kustomization.yaml lists \(resources.sorted()), the directory holds \(files.sorted())")
        var objects: [String: [String: Any]] = [:]
        for file in resources {
            for case let object as [String: Any] in try DeployFiles.yamlDocuments("\(directory)/\(file)") {
                let kind = try #require(object["kind"] as? String, "\(file): an object without kind")
                let metadata = try #require(object["metadata"] as? [String: Any])
                let name = try #require(metadata["name"] as? String)
                if kind != "Namespace" { #expect(metadata["namespace"] as? String == kustomization["namespace"] as? String, "\(kind)/\(name)") }
                objects["\(kind)/\(name)"] = object
            }
        }
        return objects
    }

    static func podSpec(_ deployment: [String: Any]) throws -> [String: Any] {
        let spec = try #require(deployment["spec"] as? [String: Any])
        let template = try #require(spec["template"] as? [String: Any])
        return try #require(template["spec"] as? [String: Any])
    }

    static func container(_ deployment: [String: Any]) throws -> [String: Any] {
        let containers = try #require(try podSpec(deployment)["containers"] as? [[String: Any]])
        #expect(containers.count == 1)
        return try #require(containers.first)
    }

    /// The configuration in the ConfigMap, loaded by the worker's own loader.
    static func configuration(_ objects: [String: [String: Any]]) throws -> (Configuration, key: String) {
        let configMap = try #require(objects["ConfigMap/herald-config"])
        let data = try #require(configMap["data"] as? [String: String])
        let json = try #require(data["herald.json"])
        let path = makeTemporaryDirectory("herald-k8s") + "/herald.json"
        try Data(json.utf8).write(to: URL(fileURLWithPath: path))
        return (try ConfigurationLoader.load(path: path, environment: [:]), "herald.json")
    }

    /// The port number a probe or Service names: a number, or a container port's name.
    static func containerPort(_ container: [String: Any], named name: Any?) -> Int? {
        if let number = name as? Int { return number }
        let ports = container["ports"] as? [[String: Any]] ?? []
        return ports.first { $0["name"] as? String == name as? String }?["containerPort"] as? Int
    }

    static func podLabels(_ deployment: [String: Any]) throws -> [String: String] {
        let template = try #require((deployment["spec"] as? [String: Any])?["template"] as? [String: Any])
        return try #require((template["metadata"] as? [String: Any])?["labels"] as? [String: String])
    }

    @Test func workersSchedulerAndDashboardRunHeraldCommandsWithTheImagesBinaryUserAndVersion() throws {
        let objects = try Self.objects()
        let image = try DeployFiles.dockerImage()
        let herald = try #require(heraldExecutable())
        // "herald 0.1.0 (commit ..., built ...)": the version is the second word.
        let words = try DeployFiles.run(herald, ["--version"]).text.split(separator: " ")
        let version = try #require(words.count > 1 ? String(words[1]) : nil)
        let uid = try #require(Int(image.user.split(separator: ":").first ?? ""))
        for (name, subcommand) in [("herald-worker", "worker"), ("herald-scheduler", "scheduler"), ("herald-dashboard", "dashboard"), ("herald-api", "api")] {
            let deployment = try #require(objects["Deployment/\(name)"], "no Deployment \(name)")
            let container = try Self.container(deployment)
            #expect(container["image"] as? String == "herald:\(version)", "\(name) should run the image of this version")
            let args = try #require(container["args"] as? [String])
            #expect(args.first == subcommand)
            try DeployFiles.expectHeraldCommand(args, "Deployment \(name)")
            #expect(container["command"] == nil, "\(name) must keep the image's ENTRYPOINT \(image.binary)")
            let security = try #require(try Self.podSpec(deployment)["securityContext"] as? [String: Any])
            #expect(security["runAsUser"] as? Int == uid, "\(name) runs as the image's user \(uid)")
            #expect(security["runAsNonRoot"] as? Bool == true)
            // The restricted Pod Security profile requires it.
            #expect((security["seccompProfile"] as? [String: Any])?["type"] as? String == "RuntimeDefault", "\(name) has no seccompProfile RuntimeDefault")
            let containerSecurity = try #require(container["securityContext"] as? [String: Any])
            #expect(containerSecurity["allowPrivilegeEscalation"] as? Bool == false, "\(name)")
            #expect(containerSecurity["readOnlyRootFilesystem"] as? Bool == true, "\(name)")
            #expect(((containerSecurity["capabilities"] as? [String: Any])?["drop"] as? [String]) == ["ALL"], "\(name)")
            for probe in ["readinessProbe", "livenessProbe"] {
                let spec = try #require(container[probe] as? [String: Any], "\(name) has no \(probe)")
                if let http = spec["httpGet"] as? [String: Any] {
                    #expect(Self.containerPort(container, named: http["port"]) != nil, "\(probe) of \(name): \(http["port"] ?? "no port") is not a container port")
                    continue
                }
                // Only the scheduler, which serves no HTTP endpoint, probes by exec.
                #expect(name == "herald-scheduler", "\(probe) of \(name) should be an httpGet probe on its endpoint")
                let exec = try #require(spec["exec"] as? [String: Any])
                let command = try #require(exec["command"] as? [String])
                if command.first == image.binary {
                    try DeployFiles.expectHeraldCommand(Array(command.dropFirst()), "\(probe) of \(name)")
                } else {
                    #expect(command.first == "/bin/sh", "\(probe) of \(name) runs \(command.first ?? "nothing"), not in the image")
                }
                #expect(!command.contains("check-config"), "\(probe) of \(name): a valid file does not make a process alive")
                if probe == "livenessProbe" {
                    #expect(!command.contains("stats"), "\(name)'s liveness must not depend on Redis: a restart does not cure a Redis outage")
                }
            }
            let resources = try #require(container["resources"] as? [String: Any])
            let requests = try #require(resources["requests"] as? [String: Any])
            let limits = try #require(resources["limits"] as? [String: Any])
            let request = try #require(Self.mebibytes(requests["memory"] as? String))
            let limit = try #require(Self.mebibytes(limits["memory"] as? String))
            #expect(request > 0 && limit >= request, "\(name): memory request \(request) Mi, limit \(limit) Mi")
        }
    }

    /// The worker's probes and Service reach the listener the ConfigMap configures, on the pod IP; the dashboard's
    /// its --listen port; both Services carry the scrape annotations; the disruption budget covers the workers.
    @Test func probesServicesAndDisruptionBudgetReachTheEndpointsHeraldServes() throws {
        let objects = try Self.objects()
        let (configuration, _) = try Self.configuration(objects)
        let listen = try #require(ListenAddress(configuration.metrics.listen), "metrics.listen '\(configuration.metrics.listen)'")
        #expect(!["127.0.0.1", "::1", "localhost"].contains(listen.host),
                "metrics.listen \(configuration.metrics.listen) is loopback: the kubelet and Prometheus cannot reach it")
        let dashboard = try #require(objects["Deployment/herald-dashboard"], "no dashboard Deployment")
        let dashboardArgs = try #require(try Self.container(dashboard)["args"] as? [String])
        let listenIndex = try #require(dashboardArgs.firstIndex(of: "--listen"), "the dashboard should listen on the pod IP")
        let dashboardListen = try #require(ListenAddress(dashboardArgs[listenIndex + 1]))
        #expect(!["127.0.0.1", "::1", "localhost"].contains(dashboardListen.host), "the dashboard listens on loopback")
        let api = try #require(objects["Deployment/herald-api"], "no api Deployment")
        let apiArgs = try #require(try Self.container(api)["args"] as? [String])
        let apiListenIndex = try #require(apiArgs.firstIndex(of: "--listen"), "the API should listen on the pod IP")
        let apiListen = try #require(ListenAddress(apiArgs[apiListenIndex + 1]))
        #expect(!["127.0.0.1", "::1", "localhost"].contains(apiListen.host), "the API listens on loopback")
        for (name, port, readiness) in [("herald-worker", listen.port, "/readyz"), ("herald-dashboard", dashboardListen.port, "/healthz"),
                                        ("herald-api", apiListen.port, "/readyz")] {
            let deployment = try #require(objects["Deployment/\(name)"])
            let container = try Self.container(deployment)
            for (probe, path) in [("readinessProbe", readiness), ("livenessProbe", "/healthz")] {
                let http = try #require((container[probe] as? [String: Any])?["httpGet"] as? [String: Any], "\(name) \(probe)")
                #expect(http["path"] as? String == path, "\(name) \(probe) asks \(http["path"] ?? "nothing"), not \(path)")
                #expect(Self.containerPort(container, named: http["port"]) == port, "\(name) \(probe) is not on port \(port)")
            }
            let service = try #require(objects["Service/\(name)"], "no Service \(name)")
            let spec = try #require(service["spec"] as? [String: Any])
            let labels = try Self.podLabels(deployment)
            let selector = try #require(spec["selector"] as? [String: String])
            #expect(!selector.isEmpty && selector.allSatisfy { labels[$0.key] == $0.value }, "Service \(name) does not select its pods")
            let ports = try #require(spec["ports"] as? [[String: Any]])
            #expect(ports.contains { Self.containerPort(container, named: $0["targetPort"]) == port }, "Service \(name) does not target port \(port)")
            let annotations = try #require((service["metadata"] as? [String: Any])?["annotations"] as? [String: String])
            #expect(annotations["prometheus.io/scrape"] == "true", "Service \(name)")
            #expect(annotations["prometheus.io/port"] == String(port), "Service \(name)")
            #expect(annotations["prometheus.io/path"] == "/metrics", "Service \(name)")
        }
        let budget = try #require(objects["PodDisruptionBudget/herald-worker"], "no PodDisruptionBudget for the workers")
        let budgetSpec = try #require(budget["spec"] as? [String: Any])
        let workerLabels = try Self.podLabels(try #require(objects["Deployment/herald-worker"]))
        let budgetSelector = try #require((budgetSpec["selector"] as? [String: Any])?["matchLabels"] as? [String: String])
        #expect(!budgetSelector.isEmpty && budgetSelector.allSatisfy { workerLabels[$0.key] == $0.value })
        #expect(budgetSpec["maxUnavailable"] != nil || budgetSpec["minAvailable"] != nil)
        // The ServiceMonitor example (outside the kustomization: it needs the operator's CRDs) scrapes both Services.
        let monitor = try DeployFiles.yamlObject("\(Self.directory)/prometheus-operator/servicemonitor.yaml")
        #expect(monitor["kind"] as? String == "ServiceMonitor")
        let endpoints = try #require((monitor["spec"] as? [String: Any])?["endpoints"] as? [[String: Any]])
        let servicePorts = ["herald-worker", "herald-dashboard"].flatMap { name in
            (((objects["Service/\(name)"]?["spec"] as? [String: Any])?["ports"] as? [[String: Any]]) ?? []).compactMap { $0["name"] as? String }
        }
        #expect(Set(endpoints.compactMap { $0["port"] as? String }) == Set(servicePorts))
        let selector = try #require(((monitor["spec"] as? [String: Any])?["selector"] as? [String: Any])?["matchLabels"] as? [String: String])
        for name in ["herald-worker", "herald-dashboard"] {
            let labels = try #require((objects["Service/\(name)"]?["metadata"] as? [String: Any])?["labels"] as? [String: String])
            #expect(selector.allSatisfy { labels[$0.key] == $0.value }, "the ServiceMonitor does not select Service \(name)")
        }
    }

    @Test func configurationKeyAndMountsAgreeWithEachOther() throws {
        let objects = try Self.objects()
        let (configuration, dataKey) = try Self.configuration(objects)
        #expect(!configuration.worker.runScheduler, "the workers leave the retries to the herald-scheduler Deployment")
        #expect(objects["Deployment/herald-scheduler"] != nil)
        let worker = try #require(objects["Deployment/herald-worker"])
        let container = try Self.container(worker)
        let environment = Dictionary(uniqueKeysWithValues: (container["env"] as? [[String: Any]] ?? []).compactMap { entry -> (String, Any)? in
            guard let name = entry["name"] as? String else { return nil }
            return (name, entry["value"] ?? entry["valueFrom"] ?? "")
        })
        let configPath = try #require(environment["HERALD_CONFIG"] as? String)
        #expect(environment["HERALD_WORKER_ID"] != nil, "a stable worker id per pod")
        let mounts = try #require(container["volumeMounts"] as? [[String: Any]])
        let volumes = try #require(try Self.podSpec(worker)["volumes"] as? [[String: Any]])
        func volume(_ name: String?) -> [String: Any]? { volumes.first { $0["name"] as? String == name } }
        // HERALD_CONFIG is the ConfigMap's herald.json.
        let configMount = try #require(mounts.first { $0["mountPath"] as? String == configPath }, "nothing is mounted at \(configPath)")
        #expect(configMount["subPath"] as? String == dataKey)
        #expect((volume(configMount["name"] as? String)?["configMap"] as? [String: Any])?["name"] as? String == "herald-config")
        // Every credential file of every app (APNs key, APNs certificate and its key, FCM service account) is a key
        // of a Secret mounted read-only at its directory, and the example shows each kind.
        var kinds: Set<String> = []
        for app in configuration.apps {
            var files: [(kind: String, path: String)] = []
            if let token = app.token { files.append(("token", token.keyFile)) }
            if let certificate = app.certificate {
                files += [certificate.pemFile, certificate.keyFile, certificate.pkcs12File].compactMap { $0 }.map { ("certificate", $0) }
            }
            if let fcm = app.fcm { files.append(("fcm", fcm.serviceAccountFile)) }
            #expect(!files.isEmpty, "app \(app.name) names no credential file")
            for file in files {
                kinds.insert(file.kind)
                let directory = (file.path as NSString).deletingLastPathComponent
                let mount = try #require(mounts.first { $0["mountPath"] as? String == directory }, "nothing is mounted at \(directory)")
                #expect(mount["readOnly"] as? Bool == true, "\(directory) should be mounted read-only")
                let source = try #require(volume(mount["name"] as? String)?["secret"] as? [String: Any], "\(directory) is not a Secret")
                let secretName = try #require(source["secretName"] as? String)
                let secret = try #require(objects["Secret/\(secretName)"], "no Secret \(secretName) in the kustomization")
                let secretKeys = Set(((secret["stringData"] as? [String: Any]) ?? (secret["data"] as? [String: Any]) ?? [:]).keys)
                #expect(secretKeys.contains((file.path as NSString).lastPathComponent), "the Secret \(secretName) has no \(file.path)")
            }
        }
        #expect(kinds == ["token", "certificate", "fcm"], "the example should show every provider's credential, shows \(kinds.sorted())")
        // SIGTERM drains: the grace period covers the shutdown deadline and two Redis command timeouts.
        let grace = try #require(try Self.podSpec(worker)["terminationGracePeriodSeconds"] as? Int)
        #expect(grace > configuration.worker.shutdownDeadlineSeconds + 2 * configuration.redis.commandTimeoutMs / 1000)
    }

    /// "96Mi", "1Gi" -> MiB.
    static func mebibytes(_ quantity: String?) -> Int? {
        guard let quantity else { return nil }
        if quantity.hasSuffix("Mi") { return Int(quantity.dropLast(2)) }
        if quantity.hasSuffix("Gi") { return Int(quantity.dropLast(2)).map { $0 * 1024 } }
        return nil
    }
}
