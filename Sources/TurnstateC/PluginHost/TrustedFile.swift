#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import TurnstateCore

/// The one place that decides whether the library may trust a file or folder
/// to hold plugin code or a plugin's config (after OpenSSH's StrictModes and
/// sudo's plugin checks). Used for plugin files, `NAME.json` configs and
/// plugin folders alike.
///
/// A path is trusted when, with every symbolic link resolved (realpath):
/// - the file itself is a regular file (a folder, for a plugin folder) owned
///   by root or by this process's effective user and not writable by its
///   group or by others;
/// - every folder from it up to `/` is owned by root or by the effective user
///   and not writable by group or others. The one exception: a folder that is
///   sticky (S_ISVTX) and owned by root, like `/tmp` (mode 1777), may be
///   writable by others: there they can add entries but cannot rename or
///   remove ours, and the file itself must still pass the checks above.
///
/// A file is opened once (`O_NOFOLLOW` on its real path) and checked through
/// that descriptor (`fstat`); the caller reads or loads that descriptor, never
/// the path again, so the file checked is the file used.
enum TrustedFile {
    /// What is being checked, for messages: "plugin file", "plugin config",
    /// "plugin folder", with the path the caller gave and its real path.
    struct Subject {
        let what: String
        let given: String
        let real: String
        /// What is refused, for messages: "refusing to load code from it".
        let refusal: String

        var description: String {
            given == real ? "\(what) \"\(given)\"" : "\(what) \"\(given)\" (real path \(real))"
        }
    }

    /// A trusted file, open for reading: valid only inside `withOpenFile`.
    struct Opened {
        let subject: Subject
        let descriptor: Int32
        /// `fstat` of `descriptor`.
        let info: stat
    }

    /// Resolves `path`, checks it and every folder above it, opens it once
    /// and checks the descriptor, then runs `body` with the open file. The
    /// descriptor is closed when `body` returns. Nil if the file does not
    /// exist and `missingIsNil` (a symbolic link to nothing is still refused).
    static func withOpenFile<R>(_ path: String, what: String, refusal: String, missingIsNil: Bool = false,
                                _ body: (Opened) throws(StoreError) -> R) throws(StoreError) -> R? {
        guard let real = try realPath(of: path, what: what, missingIsNil: missingIsNil) else { return nil }
        let subject = Subject(what: what, given: path, real: real, refusal: refusal)
        try checkFolders(from: parent(of: real), for: subject)
        // Look before opening: opening a FIFO would block, a device could act.
        var info = stat()
        guard lstat(real, &info) == 0 else { throw ioError(subject, errno) }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw StoreError(.pluginFailed, "\(subject.description) is not a regular file: \(subject.refusal)")
        }
        // O_NOFOLLOW: the real path has no links; one that appears now is refused.
        let descriptor = open(real, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard descriptor >= 0 else {
            let error = errno
            if error == ELOOP {
                throw StoreError(.pluginFailed, "\(subject.description) became a symbolic link while it was being checked: \(subject.refusal)")
            }
            throw ioError(subject, error)
        }
        defer { close(descriptor) }
        guard fstat(descriptor, &info) == 0 else { throw ioError(subject, errno) }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw StoreError(.pluginFailed, "\(subject.description) is not a regular file: \(subject.refusal)")
        }
        try checkOwnerAndMode(info, of: real, for: subject, allowStickyRoot: false)
        return try body(Opened(subject: subject, descriptor: descriptor, info: info))
    }

    /// Resolves the folder `path` and checks it and every folder above it.
    /// Returns its real path. A missing folder is TS_E_NOT_FOUND, a path that
    /// is no folder TS_E_IO.
    static func folder(_ path: String, what: String, refusal: String) throws(StoreError) -> Subject {
        let real = try realPath(of: path, what: what, missingIsNil: false)!
        let subject = Subject(what: what, given: path, real: real, refusal: refusal)
        var info = stat()
        guard lstat(real, &info) == 0 else { throw ioError(subject, errno) }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw StoreError(.io, "\(subject.description) is not a folder")
        }
        try checkFolders(from: real, for: subject)
        return subject
    }

    // MARK: Checks

    /// Checks `folder` (a real path) and every folder above it up to "/".
    private static func checkFolders(from folder: String, for subject: Subject) throws(StoreError) {
        var current = folder
        while true {
            var info = stat()
            // lstat: a real path has no links; a folder swapped for one is refused.
            guard lstat(current, &info) == 0 else {
                throw StoreError(.io, "folder \"\(current)\" above \(subject.description) cannot be checked: \(String(cString: strerror(errno)))")
            }
            guard (info.st_mode & S_IFMT) == S_IFDIR else {
                throw StoreError(.pluginFailed, "\"\(current)\" above \(subject.description) is no longer a folder: \(subject.refusal)")
            }
            try checkOwnerAndMode(info, of: current, for: subject, allowStickyRoot: true)
            if current == "/" { return }
            current = parent(of: current)
        }
    }

    /// Refuses `info` (of `path`, the subject itself or a folder above it)
    /// unless it belongs to root or this process's effective user and only
    /// its owner can write it (or, if `allowStickyRoot`, it is a sticky
    /// folder owned by root).
    private static func checkOwnerAndMode(_ info: stat, of path: String, for subject: Subject,
                                          allowStickyRoot: Bool) throws(StoreError) {
        let named = path == subject.real ? subject.description : "folder \"\(path)\" above \(subject.description)"
        let user = geteuid()
        if info.st_uid != 0 && info.st_uid != user {
            let fix = user == 0 ? "chown root \(path)" : "chown \(user) \(path) (or chown root)"
            throw StoreError(.pluginFailed, "\(named) belongs to user \(info.st_uid), neither this process's user (\(user)) nor root: \(subject.refusal); run \(fix)")
        }
        let writable = info.st_mode & 0o022
        guard writable != 0 else { return }
        if allowStickyRoot && info.st_mode & S_ISVTX != 0 && info.st_uid == 0 { return }
        let who = writable == 0o022 ? "group and others" : writable == 0o020 ? "group" : "others"
        var mode = String(info.st_mode & 0o7777, radix: 8)
        while mode.count < 4 { mode = "0" + mode }
        let exception = allowStickyRoot
            ? " (only a sticky folder owned by root, like /tmp with mode 1777, may be writable by others)" : ""
        throw StoreError(.pluginFailed, "\(named) can be written by other users (mode \(mode): writable by \(who)): \(subject.refusal); run chmod go-w \(path)\(exception)")
    }

    // MARK: Paths

    /// The real path of `path` (no links, no "." or ".."), or nil if nothing
    /// is there and `missingIsNil`.
    private static func realPath(of path: String, what: String, missingIsNil: Bool) throws(StoreError) -> String? {
        if let resolved = realpath(path, nil) {
            defer { free(resolved) }
            return String(cString: resolved)
        }
        let error = errno
        guard error == ENOENT else {
            throw StoreError(.io, "\(what) \"\(path)\": cannot resolve its real path: \(String(cString: strerror(error)))")
        }
        var info = stat()
        let isLink = lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFLNK
        if missingIsNil && !isLink { return nil }
        var message = "\(what) \"\(path)\" does not exist"
        let place = absolute(path)
        if isLink {
            message += " (it is a symbolic link to something missing)"
        } else if place != path {
            message += " (looked for \(place))"
        }
        throw StoreError(.notFound, message)
    }

    /// `path` made absolute with the current folder (not resolved).
    private static func absolute(_ path: String) -> String {
        guard !path.hasPrefix("/"), let current = getcwd(nil, 0) else { return path }
        defer { free(current) }
        var folder = String(cString: current)
        if !folder.hasSuffix("/") { folder += "/" }
        return folder + (path.hasPrefix("./") ? String(path.dropFirst(2)) : path)
    }

    /// The folder that holds `path`, an absolute path without links.
    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }

    private static func ioError(_ subject: Subject, _ error: Int32) -> StoreError {
        StoreError(.io, "\(subject.description) cannot be read: \(String(cString: strerror(error)))")
    }
}
