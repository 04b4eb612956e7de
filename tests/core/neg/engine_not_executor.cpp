// Must not compile: the codec engine runs only on types that satisfy exec::executor.
// expect: constraint.*executor<Exec>
#include "hcomm/codec/codec.hpp"
struct not_an_executor {
  void for_each(int) const {}
};
hcomm::codec::engine<not_an_executor>* engine = nullptr;
