import CTurnstate
import Glibc

// The plugin's face: the exported entry function and the descriptor it
// returns. Everything the logger does to the store goes through the
// ts_store_api table and `next` it is handed; nothing here links against
// libturnstate.

/// The descriptor that `ts_plugin_entry` returns. The host keeps the pointer
/// for the life of the process (plugins are never unloaded), so it must be in
/// static storage: it is allocated once, the first time the global is read
/// (Swift initialises globals lazily and exactly once, through swift_once,
/// even when several threads race to it), and never freed or written again.
/// `UnsafePointer` is not `Sendable`; the box is `@unchecked Sendable`
/// because the memory behind it is immutable after initialisation, so
/// reading it from any thread is safe.
private struct DescriptorBox: @unchecked Sendable {
    let pointer: UnsafePointer<ts_plugin>

    init() {
        let descriptor = UnsafeMutablePointer<ts_plugin>.allocate(capacity: 1)
        descriptor.initialize(to: ts_plugin(
            abi_version: TS_PLUGIN_ABI_VERSION,
            struct_size: UInt32(MemoryLayout<ts_plugin>.size),
            // String literals given as StaticString live in the binary's
            // read-only data: static storage, as the ABI asks.
            name: cString("logger"),
            version: cString("0.1.0"),
            create: { config, store, instance, errorMessage in
                loggerCreate(config: config, store: store, instance: instance, errorMessage: errorMessage)
            },
            run: { store, next, action, instance in
                loggerRun(store: store, next: next, action: action, instance: instance)
            },
            destroy: { instance in
                loggerDestroy(instance)
            }))
        pointer = UnsafePointer(descriptor)
    }
}

private let descriptor = DescriptorBox()

private func cString(_ text: StaticString) -> UnsafePointer<CChar> {
    UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
}

/// The entry function, checked against its declaration in
/// turnstate_plugin.h and exported under its plain C name.
@c @implementation
public func ts_plugin_entry(_ hostABIVersion: UInt32) -> UnsafePointer<ts_plugin>? {
    // This plugin is written for ABI 1; a host that speaks only an older
    // ABI (there is none but 0, which means "invalid") gets nothing.
    guard hostABIVersion >= TS_PLUGIN_ABI_VERSION else { return nil }
    return descriptor.pointer
}
