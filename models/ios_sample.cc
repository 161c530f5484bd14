// The sample network of IOS's README (§3, "Usage"), the one its timeline figure shows: three 3x3
// convolutions of a 375x15x15 input, one followed by another 3x3, concatenated.
#include "ir/builder.h"
#include "models/models.h"

namespace ios::models {

Expected<ir::Graph> ios_sample() {
  ir::GraphBuilder b("ios_sample", {375, 15, 15});
  b.begin_block();
  const ir::Value x = b.input();
  auto conv3x3 = [](int channels) { return ir::Conv(channels).kernel(3).pad(1); };
  ir::Value v1 = b.conv(x, conv3x3(375));
  const ir::Value v2 = b.conv(x, conv3x3(750));
  const ir::Value v3 = b.conv(x, conv3x3(375));
  v1 = b.conv(v1, conv3x3(750));
  b.end_block(b.identity(ir::cat({v1, v2, v3})));
  return b.build();
}

}  // namespace ios::models
