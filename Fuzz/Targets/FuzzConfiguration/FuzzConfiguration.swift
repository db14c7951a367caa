import FuzzSupport
import HeraldProviders
import Worker

#if canImport(Glibc)
import Glibc
#endif

// Foundation's FileManager.contents(atPath:) leaks a read buffer on every call (Fuzz/lsan.supp), so libFuzzer
// would run a full leak scan after every input (about 100 exec/s instead of thousands): no leak checks here.
// fuzz-options: -detect_leaks=0

/// The configuration file and environment overrides: any bytes give a configuration or a list of problems,
/// never a trap. Input: the file, then optionally a NUL byte and `NAME=value` lines for the environment.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfiguration(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = fuzzInput(data, size)
    let split = input.firstIndex(of: 0) ?? input.count
    let file = Array(input[..<split])
    var environment: [String: String] = [:]
    if split < input.count {
        for line in input[(split + 1)...].split(separator: UInt8(ascii: "\n")) {
            guard let eq = line.firstIndex(of: UInt8(ascii: "=")) else { continue }
            environment[String(decoding: line[..<eq], as: UTF8.self)] = String(decoding: line[(eq + 1)...], as: UTF8.self)
        }
    }
    configurationFile.write(file)
    do {
        let configuration = try ConfigurationLoader.load(path: configurationFile.path, environment: environment)
        fuzzCheck(ConfigurationLoader.validate(configuration).isEmpty, "loaded a configuration that does not validate")
    } catch {
        fuzzCheck(!error.problems.isEmpty, "refused without naming a problem")
    }
    return 0
}

/// One scratch file per process (the loader reads a path), rewritten for every input, removed at exit;
/// in scripts/fuzz's own directory (HERALD_FUZZ_SCRATCH) when it runs the target.
private let configurationFile = ScratchFile()
private let scratchPath = (getenv("HERALD_FUZZ_SCRATCH").map { String(cString: $0) } ?? "/tmp") + "/herald-fuzz-config.\(getpid()).json"

private final class ScratchFile: Sendable {
    var path: String { scratchPath }

    init() { atexit { unlink(scratchPath) } }

    func write(_ bytes: [UInt8]) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        fuzzCheck(fd >= 0, "cannot write \(path)")
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            fuzzCheck(n > 0, "short write to \(path)")
            offset += n
        }
        close(fd)
    }
}
