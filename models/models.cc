#include "models/models.h"

namespace ios::models {

const std::vector<ModelInfo>& model_list() {
  static const std::vector<ModelInfo> kModels = {
      {"inception_v3", "Inception V3 as IOS defines it (torchvision topology without the fc)"},
      {"squeezenet", "SqueezeNet v1.0 with complex bypass (IOS)"},
      {"nasnet", "NASNet-A Large, nasnet_large(96,168) as IOS builds it"},
      {"randwire", "RandWire-WS regular regime, C=154 (seeded WS graphs or IOS's files)"},
      {"googlenet", "GoogLeNet, torchvision topology with BatchNorm folded"},
      {"densenet121", "DenseNet-121, torchvision topology; BatchNorms folded, pre-activations as per-channel affines"},
      {"ios_sample", "IOS README's sample network: four 3x3 convs of a 375x15x15 input, concatenated"},
  };
  return kModels;
}

Expected<ir::Graph> build_model(const std::string& name, const ModelOptions& options) {
  if (name == "inception_v3") return inception_v3();
  if (name == "squeezenet") return squeezenet();
  if (name == "nasnet") return nasnet(options.nasnet_stem_filters, options.nasnet_filters);
  if (name == "randwire") return randwire(options);
  if (name == "googlenet") return googlenet();
  if (name == "densenet121") return densenet121();
  if (name == "ios_sample") return ios_sample();
  std::string known;
  for (const auto& m : model_list()) known += (known.empty() ? "" : ", ") + m.name;
  return error(ErrorCode::kNotFound, "unknown model '" + name + "' (known: " + known + ")");
}

}  // namespace ios::models
