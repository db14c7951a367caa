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
/// its value. 16 bytes (offsets as 32 bits: Redis holds no value over 512 MB), so a job keeps every slot inline cheaply.
public struct JobMemberSlice: Sendable, Equatable {
    let keyOffset: Int32
    let valueStart: Int32
    let valueEnd: Int32
    let kind: JSONKind
    let hasEscapes: Bool
    let isInteger: Bool

    init(key: JSONToken, value: JSONToken) {
        keyOffset = Int32(truncatingIfNeeded: key.range.lowerBound)
        valueStart = Int32(truncatingIfNeeded: value.range.lowerBound)
        valueEnd = Int32(truncatingIfNeeded: value.range.upperBound)
        kind = value.kind
        hasEscapes = value.hasEscapes
        isInteger = value.isInteger
    }

    public var keyStart: Int { Int(keyOffset) }

    public var value: JSONToken {
        JSONToken(kind: kind, range: Int(valueStart)..<Int(valueEnd), hasEscapes: hasEscapes, isInteger: isInteger)
    }

    /// The member's bytes, key to the end of its value.
    public var range: Range<Int> { Int(keyOffset)..<Int(valueEnd) }
}

/// Every provider's members, each in its own slot (a name two providers read has a slot for each), grouped by
/// platform in `Platform.allCases` order: built once from the provider list, so a job's member is found by an index,
/// never by its name.
public final class JobMemberTable: Sendable {
    /// The most member slots of all providers together: each job keeps this many slices inline (no allocation);
    /// `JobMembers.Slices` fixes it (and the 32-bit masks bound it at 32).
    public static let capacity = JobMembers.Slices.count

    /// Platform slot → its first member slot and its member count.
    let bases: [Int]
    let counts: [Int]
    let shapes: [JobMember.Shape]
    let platforms: [Platform]
    /// Key length → the names of that length, each with the slots it fills.
    let byLength: [[(name: [UInt8], slots: [Int])]]
    let names: [String]
    /// The slots of members whose shape is `target`, and of those that imply their platform.
    let targetMask: UInt32
    let impliesMask: UInt32

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
        precondition(shapes.count <= Self.capacity,
                     "providers declare \(shapes.count) job members; JobMembers.Slices holds \(Self.capacity): raise its count (at most 32)")
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
        var targetMask: UInt32 = 0, impliesMask: UInt32 = 0
        for (slot, shape) in shapes.enumerated() {
            switch shape {
            case .plain: break
            case .target: targetMask |= 1 << slot
            case .impliesPlatform: impliesMask |= 1 << slot
            }
        }
        self.targetMask = targetMask
        self.impliesMask = impliesMask
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

/// A job's provider members, as the parser sliced them: inline, one slot per member of every provider, and a bit per
/// slot that holds one.
public struct JobMembers: Sendable {
    public typealias Slices = InlineArray<16, JobMemberSlice?>

    public let table: JobMemberTable
    var slices: Slices
    /// Bit `slot`: that slot holds a member (`null` ones too, until the parser drops them).
    var present: UInt32 = 0
    /// Bit `slot`: the job names that member, `null` included (APNs' default push type of a broadcast holds only
    /// when `push_type` is not named at all).
    var named: UInt32 = 0

    init(table: JobMemberTable) {
        self.table = table
        self.slices = InlineArray(repeating: nil)
    }

    /// Member `index` (its place in `platform`'s declared list) of the job, nil when absent (or `null`).
    @inline(__always)
    public func slice(_ platform: Platform, _ index: Int) -> JobMemberSlice? {
        guard index < table.counts[platform.slot] else { return nil }
        let slot = table.bases[platform.slot] + index
        return present & (1 << slot) == 0 ? nil : slices[slot]
    }

    /// Keeps a member's slice in `slot`; false when the slot holds one already (the member is given twice).
    @inline(__always)
    mutating func keep(_ slice: JobMemberSlice, in slot: Int) -> Bool {
        guard present & (1 << slot) == 0 else { return false }
        present |= 1 << slot
        named |= 1 << slot
        slices[slot] = slice
        return true
    }

    /// Drops the members given as `null` (absent, as every field's `null`).
    mutating func dropNulls() {
        var bits = present
        while bits != 0 {
            let slot = bits.trailingZeroBitCount
            bits &= bits - 1
            if slices[slot]?.kind == .null { present &= ~(1 << slot) }
        }
    }

    /// Whether a member that names a target (`JobMember.Shape.target`) is present.
    var hasTarget: Bool { present & table.targetMask != 0 }

    /// Whether the job names `platform`'s member `index` at all (`null` included).
    public func isNamed(_ platform: Platform, _ index: Int) -> Bool {
        index < table.counts[platform.slot] && named & (1 << (table.bases[platform.slot] + index)) != 0
    }

    /// The first platform with a present member that implies it and that passes `matches`.
    func anyImplied(_ matches: (Platform) -> Bool) -> Platform? {
        var bits = present & table.impliesMask
        while bits != 0 {
            let slot = bits.trailingZeroBitCount
            bits &= bits - 1
            if matches(table.platforms[slot]) { return table.platforms[slot] }
        }
        return nil
    }

    /// The platform of the last present member (in platform order) that implies its platform and passes `matches`.
    func implied(_ matches: (JobMember.Shape) -> Bool) -> Platform? {
        var bits = present & table.impliesMask
        var found: Platform? = nil
        while bits != 0 {
            let slot = bits.trailingZeroBitCount
            bits &= bits - 1
            if matches(table.shapes[slot]) { found = table.platforms[slot] }
        }
        return found
    }
}

extension JobMembers: Equatable {
    public static func == (a: JobMembers, b: JobMembers) -> Bool {
        guard a.table === b.table, a.present == b.present, a.named == b.named else { return false }
        for i in 0..<JobMemberTable.capacity where a.present & (1 << i) != 0 && a.slices[i] != b.slices[i] { return false }
        return true
    }
}

/// A provider's view of its members in one job: typed values, refused with the parser's own errors.
public struct JobMemberReader {
    public let scanner: JSONScanner
    /// The job's members, nil when none of this provider's is present (then nothing is copied or scanned).
    let members: JobMembers?
    /// This provider's first slot, and a bit per member of its own that is present.
    let base: Int
    let own: UInt32

    @usableFromInline
    init(scanner: JSONScanner, members: JobMembers?, base: Int, own: UInt32) {
        self.scanner = scanner
        self.members = members
        self.base = base
        self.own = own
    }

    /// Its member `index` (in its declared order), nil when absent.
    @inline(__always)
    public func slice(_ index: Int) -> JobMemberSlice? {
        guard own & (1 << index) != 0, let members else { return nil }
        return members.slices[base + index]
    }

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

extension JobMembers {
    /// `platform`'s first slot, and a bit per member of its own that the job has.
    @usableFromInline
    func own(_ platform: Platform) -> (base: Int, bits: UInt32) {
        let base = table.bases[platform.slot]
        let mask: UInt32 = (1 << UInt32(table.counts[platform.slot])) - 1
        return (base, (present >> UInt32(base)) & mask)
    }
}

extension JobSpec {
    /// Whether the job has any of `platform`'s members: a provider that finds none skips their reading.
    public func hasMembers(of platform: Platform) -> Bool { members.own(platform).bits != 0 }

    /// Runs `body` with `platform`'s members of this job (`job`: the bytes it was parsed from; `scanner` is always
    /// over them). Inlinable, so each provider's reading is specialized to its own type; a job with none of its
    /// members copies none.
    @inlinable
    public func readMembers<R>(of platform: Platform, in job: [UInt8], _ body: (JobMemberReader) throws(JobError) -> R) throws(JobError) -> R {
        let (base, own) = members.own(platform)
        return try job.withUnsafeBufferPointer { (buffer) throws(JobError) -> R in
            try body(JobMemberReader(scanner: JSONScanner(buffer), members: own == 0 ? nil : members, base: base, own: own))
        }
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
