// `std::visit(Overloaded{[](const A&) {...}, [](const B&) {...}}, v)`: one lambda per alternative, so a
// variant that grows an alternative fails to compile at every visit that forgot it.
#pragma once

namespace ios {

template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

}  // namespace ios
