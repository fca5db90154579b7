import Glibc

// Just enough JSON for the logger, without Foundation and without recursion:
// a cursor that reads the config object, and a splitter that cuts the
// store's state (minified JSON text) into its top-level members.

/// A cursor over UTF-8 JSON text, for the config: it reads punctuation,
/// strings (unescaped) and the literals `true` and `false`.
struct JSONCursor {
    let base: UnsafePointer<UInt8>
    let count: Int
    var index = 0

    init(_ base: UnsafePointer<UInt8>, count: Int) {
        self.base = base
        self.count = count
    }

    var atEnd: Bool { index >= count }

    var peek: UInt8? { index < count ? base[index] : nil }

    mutating func skipSpace() {
        while index < count {
            switch base[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    /// Skips white space, then consumes `byte` if it is next.
    mutating func take(_ byte: UInt8) -> Bool {
        skipSpace()
        guard index < count, base[index] == byte else { return false }
        index += 1
        return true
    }

    /// Consumes the literal `word` ("true", "false", "null") if it is next.
    mutating func take(word: StaticString) -> Bool {
        skipSpace()
        let length = word.utf8CodeUnitCount
        guard count - index >= length, memcmp(base + index, word.utf8Start, length) == 0 else { return false }
        index += length
        return true
    }

    /// Reads a string and returns its unescaped UTF-8 bytes, or nil if the
    /// next value is not a well-formed string.
    mutating func string() -> [UInt8]? {
        skipSpace()
        guard index < count, base[index] == UInt8(ascii: "\"") else { return nil }
        index += 1
        var bytes: [UInt8] = []
        while index < count {
            let byte = base[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return bytes
            case UInt8(ascii: "\\"):
                guard index < count else { return nil }
                let escape = base[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): bytes.append(escape)
                case UInt8(ascii: "b"): bytes.append(0x08)
                case UInt8(ascii: "f"): bytes.append(0x0C)
                case UInt8(ascii: "n"): bytes.append(0x0A)
                case UInt8(ascii: "r"): bytes.append(0x0D)
                case UInt8(ascii: "t"): bytes.append(0x09)
                case UInt8(ascii: "u"):
                    guard var scalar = hex4() else { return nil }
                    if scalar >= 0xD800 && scalar < 0xDC00 {
                        // A high surrogate must be followed by \u and a low one.
                        guard count - index >= 2, base[index] == UInt8(ascii: "\\"), base[index + 1] == UInt8(ascii: "u")
                        else { return nil }
                        index += 2
                        guard let low = hex4(), low >= 0xDC00 && low < 0xE000 else { return nil }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if scalar >= 0xDC00 && scalar < 0xE000 {
                        return nil
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { return nil }
                    bytes.append(contentsOf: UTF8.encode(unicode)!)
                default:
                    return nil
                }
            default:
                if byte < 0x20 { return nil }
                bytes.append(byte)
            }
        }
        return nil
    }

    private mutating func hex4() -> UInt32? {
        guard count - index >= 4 else { return nil }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = base[index]
            index += 1
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }
}

/// One top-level member of a JSON object, as byte offsets into its text. The
/// key range includes the quotes, so it can be copied into output as it is.
struct Member {
    /// The `{` or `,` before the member.
    var separator: Int
    var keyStart: Int
    var keyEnd: Int
    var valueStart: Int
    var valueEnd: Int
}

/// Reads the top-level members of a JSON object one at a time, without
/// looking inside the values more than it takes to find where they end.
/// Iterative (a depth counter, no recursion). Between members its whole
/// state is `offset`, the position of the `{` or `,` before the next member
/// (or of the closing `}`), so a reading can be resumed at such a position.
struct MemberReader {
    let base: UnsafePointer<UInt8>
    let end: UnsafePointer<UInt8>
    var offset = 0
    /// Set when the text turned out not to be a JSON object.
    private(set) var failed = false
    private var done = false

    init(_ base: UnsafePointer<UInt8>, count: Int) {
        self.base = base
        end = base + count
        var p = base
        skipSpace(&p)
        if p < end, p.pointee == UInt8(ascii: "{") {
            offset = p - base
        } else {
            failed = true
        }
    }

    /// Continues from a separator at `offset`, found by another reader of a
    /// text whose bytes up to and including it are the same as this one's.
    mutating func resume(at offset: Int) {
        self.offset = offset
    }

    private func skipSpace(_ p: inout UnsafePointer<UInt8>) {
        while p < end, p.pointee == 0x20 || p.pointee == 0x0A || p.pointee == 0x0D || p.pointee == 0x09 { p += 1 }
    }

    /// The next member, or nil at the end of the object or on malformed text
    /// (then `failed` is set).
    mutating func next() -> Member? {
        if done || failed { return nil }
        var p = base + offset
        let separator = p.pointee
        if separator == UInt8(ascii: "}") {
            done = true
            return nil
        }
        p += 1
        skipSpace(&p)
        guard p < end else { return fail() }
        if separator == UInt8(ascii: "{") && p.pointee == UInt8(ascii: "}") {
            done = true
            return nil
        }
        guard p.pointee == UInt8(ascii: "\""), let keyEnd = skipString(p, end) else { return fail() }
        let keyStart = p
        p = keyEnd
        skipSpace(&p)
        guard p < end, p.pointee == UInt8(ascii: ":") else { return fail() }
        p += 1
        skipSpace(&p)
        let valueStart = p
        guard let valueEnd = skipValue(p, end) else { return fail() }
        p = valueEnd
        skipSpace(&p)
        guard p < end, p.pointee == UInt8(ascii: ",") || p.pointee == UInt8(ascii: "}") else { return fail() }
        let member = Member(separator: offset, keyStart: keyStart - base, keyEnd: keyEnd - base,
                            valueStart: valueStart - base, valueEnd: valueEnd - base)
        offset = p - base
        return member
    }

    private mutating func fail() -> Member? {
        failed = true
        return nil
    }
}

/// The top-level members that differ between two JSON objects: `changed`
/// (in `new`: new keys and keys whose value text differs, in `new`'s order)
/// and `removed` (in `old`: keys that `new` lacks). Nil if either text is not
/// an object.
///
/// It reads only what it must. The bytes the two texts have in common at the
/// start and at the end are found with memcmp; members that lie wholly in the
/// common start are the same in both and are skipped (in `old` only: `new`
/// resumes where `old` left the common start); members whose separator lies
/// in the common end are the same in both and are not read at all. That
/// holds because a `,` that both texts have in their common end is, in both,
/// outside strings (the quotes after it are the same, and an unescaped
/// quote's escaping depends only on the backslashes just before it, which
/// the `,` cuts off) and at the same depth (the brackets after it are the
/// same), so it is a top-level separator in both or in neither.
func diffTopLevel(old: UnsafePointer<UInt8>, oldCount: Int, new: UnsafePointer<UInt8>, newCount: Int)
    -> (changed: [Member], removed: [Member])? {
    let shorter = min(oldCount, newCount)
    let prefix = commonPrefix(old, new, shorter)
    if prefix == oldCount && oldCount == newCount { return ([], []) }
    let suffix = min(commonSuffix(old + oldCount, new + newCount, shorter), shorter - prefix)

    var oldReader = MemberReader(old, count: oldCount)
    var newReader = MemberReader(new, count: newCount)
    var oldMiddle: [Member] = []
    var resumeAt: Int?
    var next = oldReader.next()
    // A member whose value and the separator after it are in the common
    // start is the same member in `new`, at the same place.
    while next != nil, oldReader.offset < prefix {
        resumeAt = oldReader.offset
        next = oldReader.next()
    }
    while let member = next, member.separator < oldCount - suffix {
        oldMiddle.append(member)
        next = oldReader.next()
    }
    if let resumeAt { newReader.resume(at: resumeAt) }
    var newMiddle: [Member] = []
    while let member = newReader.next(), member.separator < newCount - suffix {
        newMiddle.append(member)
    }
    if oldReader.failed || newReader.failed { return nil }

    func same(_ a: UnsafePointer<UInt8>, _ aStart: Int, _ aEnd: Int, _ b: UnsafePointer<UInt8>, _ bStart: Int, _ bEnd: Int) -> Bool {
        aEnd - aStart == bEnd - bStart && memcmp(a + aStart, b + bStart, aEnd - aStart) == 0
    }
    var matched = [Bool](repeating: false, count: oldMiddle.count)
    var changed: [Member] = []
    for (position, member) in newMiddle.enumerated() {
        // Keys keep their order from one state to the next: look at the same
        // position first, then at the others (few: only the middle).
        var found: Int?
        if position < oldMiddle.count,
           same(old, oldMiddle[position].keyStart, oldMiddle[position].keyEnd, new, member.keyStart, member.keyEnd) {
            found = position
        } else {
            found = oldMiddle.firstIndex { same(old, $0.keyStart, $0.keyEnd, new, member.keyStart, member.keyEnd) }
        }
        if let found {
            matched[found] = true
            let was = oldMiddle[found]
            if same(old, was.valueStart, was.valueEnd, new, member.valueStart, member.valueEnd) { continue }
        }
        changed.append(member)
    }
    var removed: [Member] = []
    for (index, member) in oldMiddle.enumerated() where !matched[index] {
        removed.append(member)
    }
    return (changed, removed)
}

/// How many bytes `a` and `b` have in common at the start (at most `count`).
private func commonPrefix(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, _ count: Int) -> Int {
    var i = 0
    while count - i >= 4096 && memcmp(a + i, b + i, 4096) == 0 { i += 4096 }
    while count - i >= 64 && memcmp(a + i, b + i, 64) == 0 { i += 64 }
    while i < count && a[i] == b[i] { i += 1 }
    return i
}

/// How many bytes the texts that end at `aEnd` and `bEnd` have in common at
/// the end (at most `count`).
private func commonSuffix(_ aEnd: UnsafePointer<UInt8>, _ bEnd: UnsafePointer<UInt8>, _ count: Int) -> Int {
    var i = 0
    while count - i >= 4096 && memcmp(aEnd - i - 4096, bEnd - i - 4096, 4096) == 0 { i += 4096 }
    while count - i >= 64 && memcmp(aEnd - i - 64, bEnd - i - 64, 64) == 0 { i += 64 }
    while i < count && (aEnd - i - 1).pointee == (bEnd - i - 1).pointee { i += 1 }
    return i
}

/// The end of the string that starts (with its opening quote) at `start`, or
/// nil if the text ends inside it.
@inline(__always)
private func skipString(_ start: UnsafePointer<UInt8>, _ end: UnsafePointer<UInt8>) -> UnsafePointer<UInt8>? {
    let classes = byteClasses.table
    var p = start + 1
    while p < end {
        switch classes[Int(p.pointee)] {
        case ByteClass.quote:
            return p + 1
        case ByteClass.backslash:
            p += 2
        default:
            p += 1
        }
    }
    return nil
}

/// What a byte means to the splitter. Everything else is 0, passed over by
/// one table look-up.
private enum ByteClass {
    static let quote: UInt8 = 1
    static let backslash: UInt8 = 2
    static let open: UInt8 = 3
    static let close: UInt8 = 4
}

private struct ByteClasses: @unchecked Sendable {
    // Written once, when the global below is first read (Swift initialises
    // globals exactly once, through swift_once), then only read: safe to
    // share between threads.
    let table: UnsafeMutablePointer<UInt8>

    init() {
        table = .allocate(capacity: 256)
        table.initialize(repeating: 0, count: 256)
        table[Int(UInt8(ascii: "\""))] = ByteClass.quote
        table[Int(UInt8(ascii: "\\"))] = ByteClass.backslash
        table[Int(UInt8(ascii: "{"))] = ByteClass.open
        table[Int(UInt8(ascii: "["))] = ByteClass.open
        table[Int(UInt8(ascii: "}"))] = ByteClass.close
        table[Int(UInt8(ascii: "]"))] = ByteClass.close
    }
}

private let byteClasses = ByteClasses()

/// The end of the value that starts at `start` (no white space before it),
/// or nil if the text ends first. Checks only what it needs to find the end;
/// the store's text is valid JSON already.
private func skipValue(_ start: UnsafePointer<UInt8>, _ end: UnsafePointer<UInt8>) -> UnsafePointer<UInt8>? {
    guard start < end else { return nil }
    var p = start
    switch p.pointee {
    case UInt8(ascii: "\""):
        return skipString(p, end)
    case UInt8(ascii: "{"), UInt8(ascii: "["):
        let classes = byteClasses.table
        var depth = 0
        var inString = false
        while p < end {
            let kind = classes[Int(p.pointee)]
            p += 1
            if kind == 0 { continue }
            if inString {
                if kind == ByteClass.quote {
                    inString = false
                } else if kind == ByteClass.backslash {
                    p += 1
                }
                continue
            }
            switch kind {
            case ByteClass.quote:
                inString = true
            case ByteClass.open:
                depth += 1
            case ByteClass.close:
                depth -= 1
                if depth == 0 { return p }
            default:
                break
            }
        }
        return nil
    default:
        // A number or a literal: up to the next delimiter.
        while p < end {
            switch p.pointee {
            case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x09, 0x0A, 0x0D:
                return p > start ? p : nil
            default:
                p += 1
            }
        }
        return p > start ? p : nil
    }
}
