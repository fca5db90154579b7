// app.cpp - the C++ face from the Debian packages: built by Tests/deb/run.sh
// with nothing but `c++ -std=c++17 app.cpp $(pkg-config --cflags --libs
// turnstate)` (turnstate.hpp comes with libturnstate-dev), and run with the
// Swift toolchain hidden. Exits 0 only if the dispatched count arrived.
#include <turnstate.hpp>

#include <iostream>
#include <optional>
#include <string>

int main() {
    turnstate::Store store(R"({"name": "app.cpp"})");
    store.add_reducer("count", [](std::optional<std::string_view> slice,
                                  const turnstate::Action &action) -> std::optional<std::string> {
        if (!slice) return "0";
        if (action.type != "count/add" || !action.payload) return std::nullopt;
        return std::to_string(std::stoll(std::string(*slice)) + std::stoll(std::string(*action.payload)));
    });
    store.dispatch(R"({"type": "count/add", "payload": 42})");
    const std::string count = store.get("/count");
    std::cout << "app.cpp: /count is " << count << "\n";
    return count == "42" ? 0 : 1;
}
