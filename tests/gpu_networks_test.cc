// Every network x every policy x every execution mode x every precision at batch 1 and 4 against the CPU
// reference, activations poisoned before each run.
#include "gpu_test_support.h"

namespace ios::rt {
namespace {

struct Case {
  std::string model;
  sched::Policy policy;
  sched::ExecMode mode;
  bool barriers = false;      // dataflow barriers before every other stage
  std::string name() const {  // a test name: letters, digits and underscores
    std::string n = model + "_" + sched::policy_flag_name(policy) + "_" + sched::exec_mode_name(mode) +
                    (barriers ? "_barriers" : "");
    std::replace(n.begin(), n.end(), '-', '_');
    return n;
  }
  friend void PrintTo(const Case& c, std::ostream* os) { *os << c.name(); }
};

class GpuMatchesReference : public ::testing::TestWithParam<Case> {};

TEST_P(GpuMatchesReference, EveryPrecisionAtBatchOneAndFour) {
  SKIP_WITHOUT_GPU();
  const Case c = GetParam();
  Reference& ref = reference_for(c.model);
  auto plan = analytic_plan(ref.graph, c.policy, c.mode, 50, c.barriers);
  ASSERT_TRUE(plan) << plan.status().to_string();
  const std::string label =
      sched::policy_flag_name(c.policy) + "/" + sched::exec_mode_name(c.mode) + (c.barriers ? "+barriers" : "");
  for (const std::string& precision : kPrecisions)
    for (int batch : {1, 4}) {
      if (precision == "fp16" && ref.max_abs > kHalfMax) {
        // Seeded He weights without normalisation: activations grow past fp16's largest value.
        std::printf("[check] %-12s %-27s fp16 not checked: reference activations reach %.3g > 65504\n", c.model.c_str(),
                    label.c_str(), ref.max_abs);
        continue;
      }
      ExecutorOptions eo;
      eo.config = config_of(precision, "auto", batch);
      eo.context = context_for(eo.config);
      auto exec = Executor::create(ref.graph, ref.weights, *plan, eo);
      ASSERT_TRUE(exec) << exec.status().to_string();
      ASSERT_TRUE((*exec)->poison_activations().is_ok());
      ASSERT_TRUE((*exec)->set_input(ref.input[batch]).is_ok());
      Status ran = (*exec)->run();
      ASSERT_TRUE(ran.is_ok()) << ran.to_string();
      auto out = (*exec)->output();
      ASSERT_TRUE(out);
      const double err = reference::relative_l2_error(*out, ref.output[batch]);
      Status again = (*exec)->run();  // a second replay reuses the same memory: same answer
      ASSERT_TRUE(again.is_ok()) << again.to_string();
      EXPECT_EQ(*(*exec)->output(), *out) << "second run differs";
      EXPECT_LT(err, eo.config.tolerance()) << c.name() << " " << eo.config.key();
      const KernelReport k = (*exec)->kernel_report();
      std::printf(
          "[check] %-12s %-27s %-14s rel-L2 %.3e | convs %d fused %d legacy %d | concat inputs in place %d copied %d | "
          "graph edges %d\n",
          c.model.c_str(), label.c_str(), eo.config.key().c_str(), err, k.convs, k.fused, k.legacy,
          k.concat_inputs_in_place, k.concat_inputs_copied, (*exec)->graph_edges());
    }
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const char* m : {"squeezenet", "googlenet", "inception_v3", "randwire", "nasnet", "densenet121"})
    for (sched::Policy p : kPolicies)
      for (sched::ExecMode mode :
           {sched::ExecMode::kStaged, sched::ExecMode::kDataflow, sched::ExecMode::kDataflowOrdered})
        cases.push_back({m, p, mode});
  for (const char* m : {"squeezenet", "googlenet", "inception_v3", "randwire", "nasnet", "densenet121"})
    cases.push_back({m, sched::Policy::kDpBoth, sched::ExecMode::kDataflow, true});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllNetworksAllPoliciesAllModes, GpuMatchesReference, ::testing::ValuesIn(all_cases()),
                         [](const auto& info) { return info.param.name(); });

// Every operator and input form on its own (the networks never use element mul, sigmoid, tanh, relu6,
// dilation, average pools that exclude padding or slices at batch > 1).

}  // namespace
}  // namespace ios::rt
