/// A top-level member of a job that one provider reads (APNs' `push_type`, FCM's `message`): declared in the
/// provider's module, its slice kept by the parser, its value read and judged by the provider
/// (`PushProvider.readJob`). The parser itself reads only the envelope every job shares.
public struct JobMember: Sendable {
    public let name: String
    public let shape: Shape

    /// What the member says about a job that names no `platform` (the shapes producers relied on before
    /// `platform` existed; a new provider's members need none, its jobs name their platform).
    public enum Shape: Sendable, Equatable {
        case plain
        /// Names a target other than a device token (APNs' broadcast `channel`): with a payload the job has its
        /// default provider's shape, as with a `token`.
        case target
        /// Without a token, tokens or a `target` member (and, when `withoutPayload`, without a payload) the job is
        /// this provider's.
        case impliesPlatform(withoutPayload: Bool)
    }

    public init(_ name: String, shape: Shape = .plain) {
        self.name = name
        self.shape = shape
    }
}

/// The slice of one provider member in a job's bytes: where its key starts (a multicast removes key and value) and
/// its value.
public struct JobMemberSlice: Sendable, Equatable {
    public let keyStart: Int
    public let value: JSONToken

    /// The member's bytes, key to the end of its value.
    public var range: Range<Int> { keyStart..<value.range.upperBound }
}

/// Every provider's members, each in its own slot (a name two providers read has a slot for each), grouped by
/// platform in `Platform.allCases` order: built once from the provider list, so a job's member is found by an index,
/// never by its name.
public final class JobMemberTable: Sendable {
    /// The most member slots of all providers together: each job keeps this many slices inline (no allocation).
    public static let capacity = 16

    /// Platform slot → its first member slot and its member count.
    let bases: [Int]
    let counts: [Int]
    let shapes: [JobMember.Shape]
    let platforms: [Platform]
    /// Key length → the names of that length, each with the slots it fills.
    let byLength: [[(name: [UInt8], slots: [Int])]]
    let names: [String]

    /// `members`: each platform's declared members (absent platforms have none).
    public init(_ members: [Platform: [JobMember]]) {
        var bases: [Int] = [], counts: [Int] = [], shapes: [JobMember.Shape] = [], platforms: [Platform] = [], names: [String] = []
        for platform in Platform.allCases {
            let own = members[platform] ?? []
            bases.append(shapes.count)
            counts.append(own.count)
            for member in own {
                shapes.append(member.shape)
                platforms.append(platform)
                names.append(member.name)
            }
        }
        precondition(shapes.count <= Self.capacity, "providers declare \(shapes.count) job members; JobMemberTable.capacity is \(Self.capacity)")
        var byLength = [[(name: [UInt8], slots: [Int])]](repeating: [], count: (names.map(\.utf8.count).max() ?? 0) + 1)
        for (slot, name) in names.enumerated() {
            let bytes = Array(name.utf8)
            if let i = byLength[bytes.count].firstIndex(where: { $0.name == bytes }) {
                byLength[bytes.count][i].slots.append(slot)
            } else {
                byLength[bytes.count].append((bytes, [slot]))
            }
        }
        self.bases = bases
        self.counts = counts
        self.shapes = shapes
        self.platforms = platforms
        self.byLength = byLength
        self.names = names
    }

    /// A table without provider members: the parser reads the envelope only.
    public static let none = JobMemberTable([:])

    /// The slots a key fills (compared in place; an escaped key is decoded first), empty for a member no provider reads.
    @inline(__always)
    func slots(of key: JSONToken, in scanner: JSONScanner) -> [Int]? {
        let length = key.contentRange.count
        if key.hasEscapes {
            let name = Array(scanner.stringValue(key).utf8)
            guard name.count < byLength.count else { return nil }
            return byLength[name.count].first { $0.name == name }?.slots
        }
        guard length < byLength.count else { return nil }
        for entry in byLength[length] {
            let matched = entry.name.withUnsafeBufferPointer { name in
                var i = 0
                let start = key.contentRange.lowerBound
                while i < length, scanner.bytes[start + i] == name[i] { i += 1 }
                return i == length
            }
            if matched { return entry.slots }
        }
        return nil
    }
}

/// A job's provider members, as the parser sliced them: inline, one slot per member of every provider.
public struct JobMembers: Sendable {
    public let table: JobMemberTable
    var slices: InlineArray<16, JobMemberSlice?>

    init(table: JobMemberTable) {
        self.table = table
        self.slices = InlineArray(repeating: nil)
    }

    /// Member `index` (its place in `platform`'s declared list) of the job, nil when absent (or `null`).
    @inline(__always)
    public func slice(_ platform: Platform, _ index: Int) -> JobMemberSlice? {
        guard index < table.counts[platform.slot] else { return nil }
        return slices[table.bases[platform.slot] + index]
    }

    /// Whether any member of that shape is present, and of which platform the last one is (in platform order).
    func present(_ matches: (JobMember.Shape) -> Bool) -> Platform? {
        var found: Platform? = nil
        for slot in 0..<table.shapes.count where slices[slot] != nil && matches(table.shapes[slot]) { found = table.platforms[slot] }
        return found
    }
}

extension JobMembers: Equatable {
    public static func == (a: JobMembers, b: JobMembers) -> Bool {
        guard a.table === b.table else { return false }
        for i in 0..<JobMemberTable.capacity where a.slices[i] != b.slices[i] { return false }
        return true
    }
}

/// A provider's view of its members in one job: typed values, refused with the parser's own errors.
public struct JobMemberReader {
    public let scanner: JSONScanner
    let members: JobMembers
    let platform: Platform

    /// Its member `index` (in its declared order), nil when absent.
    @inline(__always)
    public func slice(_ index: Int) -> JobMemberSlice? { members.slice(platform, index) }

    public func string(_ index: Int, _ name: String) throws(JobError) -> String? {
        guard let value = slice(index)?.value else { return nil }
        guard value.kind == .string else { throw JobError.wrongType(field: name, expected: "a string") }
        return scanner.stringValue(value)
    }

    public func integer(_ index: Int, _ name: String) throws(JobError) -> Int64? {
        guard let value = slice(index)?.value else { return nil }
        return try JobParser.integer(value, name, scanner)
    }

    /// The value's bytes as written (an object's, an array's).
    public func bytes(_ value: JSONToken) -> [UInt8] { Array(UnsafeBufferPointer(rebasing: scanner.bytes[value.range])) }
}

extension JobSpec {
    /// Runs `body` with `platform`'s members of this job (`job`: the bytes it was parsed from).
    public func readMembers<R>(of platform: Platform, in job: [UInt8], _ body: (JobMemberReader) throws(JobError) -> R) throws(JobError) -> R {
        let result: Result<R, JobError> = job.withUnsafeBufferPointer { buffer in
            do throws(JobError) {
                return .success(try body(JobMemberReader(scanner: JSONScanner(buffer), members: members, platform: platform)))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }
}

extension JobSpec {
    /// The bytes of the provider's own message object (`message`, `platform`'s member 0) that carries a job's targets
    /// (FCM's, Push Kit's), judged as the parser judged it.
    public func readMessage(of platform: Platform, in job: [UInt8]) throws(JobError) -> [UInt8] {
        if let payload = payloadValue, payload.kind != .object { throw JobError.payloadNotAnObject }
        return try readMembers(of: platform, in: job) { (m: JobMemberReader) throws(JobError) -> [UInt8] in
            guard let value = m.slice(0)?.value else { throw JobError.missingMessage(platform) }
            guard value.kind == .object else { throw JobError.messageNotAnObject }
            return m.bytes(value)
        }
    }
}
