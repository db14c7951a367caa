import Foundation
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

    @Test func workersAndSchedulerRunHeraldCommandsWithTheImagesBinaryUserAndVersion() throws {
        let objects = try Self.objects()
        let image = try DeployFiles.dockerImage()
        let herald = try #require(heraldExecutable())
        let version = try #require(try DeployFiles.run(herald, ["--version"]).text.split(separator: " ").last).trimmingCharacters(in: .whitespacesAndNewlines)
        let uid = try #require(Int(image.user.split(separator: ":").first ?? ""))
        for (name, subcommand) in [("herald-worker", "worker"), ("herald-scheduler", "scheduler")] {
            let deployment = try #require(objects["Deployment/\(name)"], "no Deployment \(name)")
            let container = try Self.container(deployment)
            #expect(container["image"] as? String == "herald:\(version)", "\(name) should run the image of this version")
            let args = try #require(container["args"] as? [String])
            #expect(args.first == subcommand)
            try DeployFiles.expectHeraldCommand(args, "Deployment \(name)")
            #expect(container["command"] == nil, "\(name) must keep the image's ENTRYPOINT \(image.binary)")
            // Herald listens on no port: a worker only connects out. (Issue 12 adds the health endpoint.)
            #expect(container["ports"] == nil, "\(name) declares a port herald does not serve")
            let security = try #require(try Self.podSpec(deployment)["securityContext"] as? [String: Any])
            #expect(security["runAsUser"] as? Int == uid, "\(name) runs as the image's user \(uid)")
            #expect(security["runAsNonRoot"] as? Bool == true)
            // Probes: each an exec of a command the image has.
            for probe in ["readinessProbe", "livenessProbe"] {
                let spec = try #require(container[probe] as? [String: Any], "\(name) has no \(probe)")
                let exec = try #require(spec["exec"] as? [String: Any])
                let command = try #require(exec["command"] as? [String])
                if command.first == image.binary {
                    try DeployFiles.expectHeraldCommand(Array(command.dropFirst()), "\(probe) of \(name)")
                } else {
                    #expect(command.first == "/bin/sh", "\(probe) of \(name) runs \(command.first ?? "nothing"), not in the image")
                }
                #expect(!command.contains("check-config"), "\(probe) of \(name): a valid file does not make a process alive")
            }
            let liveness = try #require((container["livenessProbe"] as? [String: Any])?["exec"] as? [String: Any])
            #expect(!((liveness["command"] as? [String]) ?? []).contains("stats"),
                    "\(name)'s liveness must not depend on Redis: a restart does not cure a Redis outage")
            let resources = try #require(container["resources"] as? [String: Any])
            let requests = try #require(resources["requests"] as? [String: Any])
            let limits = try #require(resources["limits"] as? [String: Any])
            let request = try #require(Self.mebibytes(requests["memory"] as? String))
            let limit = try #require(Self.mebibytes(limits["memory"] as? String))
            #expect(request > 0 && limit >= request, "\(name): memory request \(request) Mi, limit \(limit) Mi")
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
        // Every app's key file is a key of the Secret mounted at its directory.
        let secret = try #require(objects["Secret/herald-apns-key"])
        let secretKeys = Set(((secret["stringData"] as? [String: Any]) ?? (secret["data"] as? [String: Any]) ?? [:]).keys)
        for app in configuration.apps {
            let keyFile = try #require(app.token?.keyFile, "app \(app.name) uses a token key")
            let directory = (keyFile as NSString).deletingLastPathComponent
            let mount = try #require(mounts.first { $0["mountPath"] as? String == directory }, "nothing is mounted at \(directory)")
            let source = try #require(volume(mount["name"] as? String)?["secret"] as? [String: Any], "\(directory) is not a Secret")
            #expect(source["secretName"] as? String == "herald-apns-key")
            #expect(secretKeys.contains((keyFile as NSString).lastPathComponent), "the Secret has no \(keyFile)")
        }
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
