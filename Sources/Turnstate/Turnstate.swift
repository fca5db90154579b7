// `import Turnstate`: the store (module TurnstateCore, re-exported here) and
// the Codable wire form of actions (TaggedAction, ActionRegistry), which needs
// Foundation's JSON coders. The C library links TurnstateCore only, so that
// libturnstate.so does not load Foundation.
@_exported import TurnstateCore
