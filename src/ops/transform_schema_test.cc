// Copyright 2026 The stoker Authors.
#include "stoker/transform_schema.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ops/transform_ops.h"

namespace stoker {
namespace {

// A valid value for each required parameter name the declarations use (and
// for Grayscale's num_output_channels, whose torchvision default stoker
// refuses); a declaration with a new required parameter adds its example.
const std::map<std::string, ArgValue>& Examples() {
  static const auto* examples = new std::map<std::string, ArgValue>{
      {"size", 8},          {"bits", 4},        {"threshold", 128.0},
      {"sharpness_factor", 2.0}, {"kernel_size", 3}, {"degrees", 10.0},
      {"mean", ArgValue({0.5, 0.5, 0.5})}, {"std", ArgValue({0.2, 0.2, 0.2})},
      {"num_output_channels", 3}, {"padding", 2}, {"target_size", 8}, {"min_size", 8},
  };
  return *examples;
}

StatusOr<Transform> WithExamples(const TransformSchema& s) {
  KeywordArgs args;
  for (const ParamSchema& p : s.params) {
    auto it = Examples().find(p.name);
    if (it == Examples().end() && !p.required) continue;
    if (it == Examples().end()) return InternalError("no example for " + s.name + "." + p.name);
    args.emplace_back(p.name, it->second);
  }
  return MakeTransform(s.name, {}, args);
}

TEST(TransformSchemaTest, EveryDeclarationIsCompleteAndConsistent) {
  std::set<std::string> names;
  for (const TransformSchema* s : TransformSchemas()) {
    SCOPED_TRACE(s->name);
    EXPECT_TRUE(names.insert(s->name).second);
    EXPECT_FALSE(s->doc.empty());
    EXPECT_FALSE(s->torchvision.empty());
    EXPECT_FALSE(s->section.empty());
    ASSERT_NE(s->ops, nullptr);
    // The op's functions for its stage, and none for another.
    switch (s->stage) {
      case TransformStage::kGeometry:
        EXPECT_TRUE(s->ops->plan != nullptr && s->ops->output_size != nullptr);
        break;
      case TransformStage::kImage:
      case TransformStage::kWarp:
        EXPECT_TRUE(s->ops->image != nullptr || s->name == "Lambda");
        break;
      case TransformStage::kTensor: EXPECT_NE(s->ops->tensor, nullptr); break;
      case TransformStage::kConvert: EXPECT_EQ(s->name, "Normalize"); break;
    }
    for (const ParamSchema& p : s->params) {
      SCOPED_TRACE(p.name);
      EXPECT_FALSE(p.accepts.empty());
      EXPECT_FALSE(p.annotation.empty());
      EXPECT_TRUE(p.set != nullptr);
    }
    if (!s->python) continue;
    // Made from its defaults (and examples), it passes its own checks, and
    // reading each parameter back gives a value it accepts.
    StatusOr<Transform> t = WithExamples(*s);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_EQ(t.value().schema, s);
    EXPECT_TRUE(CheckTransform(t.value()).ok()) << CheckTransform(t.value()).ToString();
    EXPECT_EQ(t.value().ToString().rfind(s->name + "(", 0), 0u) << t.value().ToString();
  }
  for (const TorchvisionNote& n : TorchvisionNotes()) {
    const TransformSchema* s = FindTransformSchema(n.name);
    EXPECT_TRUE(s == nullptr || !s->python) << n.name << " is declared and noted";
    EXPECT_FALSE(n.instead.empty());
  }
  EXPECT_EQ(FindTransformSchema("NoSuchTransform"), nullptr);
}

TEST(TransformSchemaTest, BindsArgumentsAsPythonDoes) {
  StatusOr<Transform> t =
      MakeTransform("RandomCrop", {32}, {{"padding", 4}, {"padding_mode", "reflect"}});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t.value().height, 32);
  EXPECT_EQ(t.value().width, 32);
  EXPECT_EQ(t.value().padding, (std::array<int, 4>{4, 4, 4, 4}));
  EXPECT_EQ(t.value().padding_mode, 2);
  t = MakeTransform("RandomCrop", {ArgValue({24, 16}), ArgValue({1, 2})});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t.value().height, 24);
  EXPECT_EQ(t.value().width, 16);
  EXPECT_EQ(t.value().padding, (std::array<int, 4>{1, 2, 1, 2}));  // (left/right, top/bottom)

  auto error = [](std::string_view name, std::vector<ArgValue> pos, KeywordArgs kw) {
    return MakeTransform(name, pos, kw).status();
  };
  Status s = error("RandomCrop", {}, {});
  EXPECT_EQ(s.code(), StatusCode::kWrongType);
  EXPECT_EQ(s.message(), "RandomCrop() missing required argument 'size'");
  s = error("RandomCrop", {8}, {{"size", 8}});
  EXPECT_EQ(s.code(), StatusCode::kWrongType);
  EXPECT_EQ(s.message(), "RandomCrop() got multiple values for argument 'size'");
  s = error("RandomCrop", {8}, {{"sizes", 8}});
  EXPECT_EQ(s.message(), "RandomCrop() got an unexpected keyword argument 'sizes'");
  s = error("RandomHorizontalFlip", {0.5, 0.5}, {});
  EXPECT_EQ(s.message(), "RandomHorizontalFlip() takes at most 1 argument (2 given)");
  s = error("NoSuchTransform", {}, {});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

TEST(TransformSchemaTest, OneMessageFormNamingTransformArgumentAndRange) {
  Status s = MakeTransform("RandomPosterize", {9}).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "RandomPosterize: bits must be an int in [0, 8], got 9");
  s = MakeTransform("RandomCrop", {"a"}).status();  // a value of the wrong type
  EXPECT_EQ(s.code(), StatusCode::kWrongType);
  EXPECT_EQ(s.message(),
            "RandomCrop: size must be an int or a (height, width) pair of ints, each > 0, "
            "got 'a'");
  s = MakeTransform("RandomHorizontalFlip", {1.5}).status();
  EXPECT_EQ(s.message(), "RandomHorizontalFlip: p must be a number in [0, 1], got 1.5");
  // With the reason when the range alone does not say it.
  s = MakeTransform("RandomRotation", {10}, {{"expand", true}}).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message().rfind("RandomRotation: expand must be False, got True: it makes", 0), 0u)
      << s.message();
  // The value as the caller wrote it (the binding sets Python's repr).
  s = MakeTransform("Resize", {256}, {{"interpolation", ArgValue("nearest").set_repr(
                                                           "InterpolationMode.NEAREST")}})
          .status();
  EXPECT_NE(s.message().find("got InterpolationMode.NEAREST: stoker resamples"),
            std::string::npos)
      << s.message();
  // Checks between parameters, in the same form.
  s = MakeTransform("Resize", {300}, {{"max_size", 300}}).status();
  EXPECT_EQ(s.message(),
            "Resize: max_size must be strictly greater than the requested size for the "
            "smaller edge (300), got 300");
  s = MakeTransform("RandAugment", {}, {{"magnitude", 31}}).status();
  EXPECT_EQ(s.message(),
            "RandAugment: magnitude must be less than num_magnitude_bins (31), got 31");
  // Defaults go through the same checks: Grayscale's default is torchvision's 1.
  s = MakeTransform("Grayscale", {}).status();
  EXPECT_EQ(s.message().rfind("Grayscale: num_output_channels must be 3, got 1", 0), 0u);
  EXPECT_TRUE(MakeTransform("Grayscale", {3}).ok());
}

TEST(TransformSchemaTest, TorchvisionArgumentConventions) {
  // ColorJitter: a number v is (1 - v, 1 + v) clipped at 0; hue (-v, v).
  Transform t = MakeTransform("ColorJitter", {1.5}, {{"hue", 0.2}}).value();
  EXPECT_EQ(t.brightness, (std::array<double, 2>{0.0, 2.5}));
  EXPECT_EQ(t.hue, (std::array<double, 2>{-0.2, 0.2}));
  EXPECT_FALSE(MakeTransform("ColorJitter", {}, {{"hue", 0.6}}).ok());
  // Angles: d is (-d, d); shear s is x in (-s, s).
  t = MakeTransform("RandomAffine", {30}, {{"shear", 5}}).value();
  EXPECT_EQ(t.degrees, (std::array<double, 2>{-30, 30}));
  EXPECT_EQ(t.shear, (std::array<double, 4>{-5, 5, 0, 0}));
  EXPECT_EQ(MakeTransform("RandomAffine", {0}, {{"shear", ArgValue({1, 2, 3})}}).status().code(),
            StatusCode::kInvalidArgument);
  // Fill: a number, 1 or 3 numbers, truncated to ints in [0, 255].
  t = MakeTransform("RandomCrop", {8}, {{"fill", 200.7}}).value();
  EXPECT_EQ(t.fill, (std::array<int, 3>{200, 200, 200}));
  EXPECT_FALSE(MakeTransform("RandomCrop", {8}, {{"fill", ArgValue({1, 2})}}).ok());
  // GaussianBlur's kernel_size is (width, height) in torchvision, stored (height, width).
  t = MakeTransform("GaussianBlur", {ArgValue({3, 5})}).value();
  EXPECT_EQ(t.kernel_size, (std::array<int, 2>{5, 3}));
  EXPECT_NE(t.ToString().find("kernel_size=(3, 5)"), std::string::npos) << t.ToString();
  EXPECT_FALSE(MakeTransform("GaussianBlur", {4}).ok());
  // Resize: an int (or [int]) is the shorter side, (h, w) both.
  EXPECT_EQ(MakeTransform("Resize", {ArgValue({160})}).value().width, 0);
  EXPECT_EQ(MakeTransform("Resize", {ArgValue({160, 90})}).value().width, 90);
  // Enumerations by name, string or PIL code; None is the declared default.
  EXPECT_EQ(MakeTransform("RandomPerspective", {}).value().interpolation, 2);
  EXPECT_EQ(MakeTransform("RandomRotation", {5}, {{"interpolation", 3}}).value().interpolation,
            3);
  EXPECT_EQ(
      MakeTransform("RandomRotation", {5}, {{"interpolation", "bicubic"}}).value().interpolation,
      3);
}

TEST(TransformSchemaTest, FactoriesUseTheDeclaredDefaults) {
  auto same = [](const Transform& factory, std::string_view name, std::vector<ArgValue> args) {
    StatusOr<Transform> made = MakeTransform(name, args);
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    EXPECT_EQ(factory.ToString(), made.value().ToString());
    EXPECT_TRUE(CheckTransform(factory).ok()) << name;
  };
  same(Transform::RandomResizedCrop(224, 224), "RandomResizedCrop", {224});
  same(Transform::Resize(256), "Resize", {256});
  same(Transform::Resize(32, 24), "Resize", {ArgValue({32, 24})});
  same(Transform::CenterCrop(224, 224), "CenterCrop", {224});
  same(Transform::RandomHorizontalFlip(), "RandomHorizontalFlip", {});
  same(Transform::RandomVerticalFlip(), "RandomVerticalFlip", {});
  same(Transform::RandomGrayscale(), "RandomGrayscale", {});
  same(Transform::RandomAutocontrast(), "RandomAutocontrast", {});
  same(Transform::RandomEqualize(), "RandomEqualize", {});
  same(Transform::RandomPosterize(4), "RandomPosterize", {4});
  same(Transform::RandomSolarize(100), "RandomSolarize", {100});
  same(Transform::RandomAdjustSharpness(2), "RandomAdjustSharpness", {2});
  same(Transform::TrivialAugmentWide(), "TrivialAugmentWide", {});
  same(Transform::RandAugment(), "RandAugment", {});
  same(Transform::AutoAugment(), "AutoAugment", {});
  same(Transform::RandomErasing(), "RandomErasing", {});
  same(Transform::RandomCrop(32, 32, {0, 0, 0, 0}, false), "RandomCrop", {32});
  same(Transform::GaussianBlur({3, 3}, {0.1, 2.0}), "GaussianBlur", {3});
  same(Transform::RandomRotation({-10, 10}), "RandomRotation", {10});
  same(Transform::RandomAffine({-10, 10}, {0, 0}, {1, 1}, {0, 0, 0, 0}), "RandomAffine", {10});
  same(Transform::RandomPerspective(), "RandomPerspective", {});
  same(Transform::ColorJitter({1, 1}, {1, 1}, {1, 1}, {0, 0}), "ColorJitter", {});
  same(Transform::Normalize({0.5f, 0.5f, 0.5f}, {0.2f, 0.2f, 0.2f}), "Normalize",
       {ArgValue({0.5, 0.5, 0.5}), ArgValue({0.2, 0.2, 0.2})});
}

TEST(TransformSchemaTest, CheckTransformMatchesMakeTransform) {
  // A field-built transform out of range gets MakeTransform's message.
  EXPECT_EQ(CheckTransform(Transform::RandomPosterize(9)).message(),
            MakeTransform("RandomPosterize", {9}).status().message());
  Transform t = Transform::RandomErasing();
  t.scale_min = 0.5;
  t.scale_max = 0.1;
  EXPECT_EQ(CheckTransform(t).message(),
            "RandomErasing: scale must be a pair (min, max) of finite numbers with 0 <= min <= "
            "max <= 1, got (0.5, 0.1)");
  EXPECT_EQ(CheckTransform(Transform::Callback(nullptr, "f")).code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckTransform(Transform::Callback(
                                 [](uint8_t*, int, int, uint64_t) { return Status::OK(); }, "f"))
                  .ok());
  EXPECT_EQ(Transform::Callback(nullptr, "shift").ToString(), "Lambda(shift)");
  EXPECT_FALSE(CheckTransform(Transform{}).ok());
}

// The generic `fields` parameter: every image transform has it, last and
// keyword-only; it fills Transform::fields and shows in ToString only when given.
TEST(TransformSchemaTest, ImageTransformsNameTheirFields) {
  for (const TransformSchema* s : TransformSchemas()) {
    const bool image = s->stage == TransformStage::kGeometry ||
                       s->stage == TransformStage::kImage || s->stage == TransformStage::kWarp;
    const ParamSchema* p = s->Param("fields");
    EXPECT_EQ(p != nullptr, image && s->python) << s->name;
    if (p == nullptr) continue;
    EXPECT_TRUE(p->keyword_only);
    EXPECT_EQ(&s->params.back(), p) << s->name;
  }
  StatusOr<Transform> t = MakeTransform("Resize", {24}, {{"fields", {"image", "depth"}}});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t.value().fields, (std::vector<std::string>{"image", "depth"}));
  EXPECT_NE(t.value().ToString().find("fields=['image', 'depth']"), std::string::npos)
      << t.value().ToString();
  EXPECT_TRUE(CheckTransform(t.value()).ok());
  t = MakeTransform("ColorJitter", {0.2}, {{"fields", "image2"}});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t.value().fields, std::vector<std::string>{"image2"});
  EXPECT_EQ(MakeTransform("Resize", {24}).value().ToString().find("fields"), std::string::npos);
  EXPECT_EQ(MakeTransform("Resize", {24}, {{"fields", {"a", "a"}}}).status().message(),
            "Resize: fields must be None or a list of the record's image field names, got "
            "('a', 'a'): 'a' is named twice");
  EXPECT_EQ(MakeTransform("Resize", {24}, {{"fields", {3}}}).status().code(),
            StatusCode::kWrongType);
  EXPECT_EQ(FindTransformSchema("Normalize")->Param("fields"), nullptr);
}

TEST(TransformSchemaTest, StagesAndFlags) {
  EXPECT_TRUE(Transform::RandomResizedCrop(8, 8).random_geometry());
  EXPECT_FALSE(Transform::CenterCrop(8, 8).random_geometry());
  EXPECT_TRUE(Transform::ColorJitter({1, 1}, {1, 1}, {1, 1}, {0, 0}).photometric());
  EXPECT_TRUE(Transform::RandomPerspective().photometric());  // kWarp: on the output image
  EXPECT_FALSE(Transform::RandomErasing().photometric());
  EXPECT_FALSE(Transform::Normalize({0, 0, 0}, {1, 1, 1}).photometric());
  for (std::string_view name : {"Resize", "CenterCrop", "Normalize"}) {
    EXPECT_TRUE(FindTransformSchema(name)->deterministic) << name;
  }
  EXPECT_FALSE(FindTransformSchema("RandomCrop")->deterministic);
  EXPECT_EQ(Transform::RandomErasing().name(), "RandomErasing");
}

// Issue 32 item 2: no declaration accepts inf, -inf or nan, alone or in a
// sequence, for any parameter (C++, Python and the CLI all build transforms
// here), except GaussianBlur's sigma=inf: torchvision's box blur, defined.
TEST(TransformSchemaTest, NonFiniteValuesAreRefusedAtConstruction) {
  const double inf = std::numeric_limits<double>::infinity();
  std::set<std::string> accepted;
  for (const TransformSchema* s : TransformSchemas()) {
    for (const ParamSchema& p : s->params) {
      for (double bad : {inf, -inf, std::nan("")}) {
        for (const ArgValue& v : {ArgValue(bad), ArgValue({bad, bad}), ArgValue({0.5, bad}),
                                  ArgValue({bad, bad, bad}), ArgValue({0.5, 0.5, 0.5, bad})}) {
          KeywordArgs args;
          for (const ParamSchema& q : s->params) {
            if (q.name == p.name) continue;
            auto it = Examples().find(q.name);
            if (it != Examples().end()) args.emplace_back(q.name, it->second);
          }
          args.emplace_back(p.name, v);
          if (MakeTransform(s->name, {}, args).ok()) {
            accepted.insert(s->name + "." + p.name + "=" + v.Repr());
          }
        }
      }
    }
  }
  const std::set<std::string> want = {"GaussianBlur.sigma=inf", "GaussianBlur.sigma=(inf, inf)",
                                      "GaussianBlur.sigma=(0.5, inf)"};
  EXPECT_EQ(accepted, want);
}

TEST(ArgValueTest, ReprIsPythonLike) {
  EXPECT_EQ(ArgValue().Repr(), "None");
  EXPECT_EQ(ArgValue(true).Repr(), "True");
  EXPECT_EQ(ArgValue(3).Repr(), "3");
  EXPECT_EQ(ArgValue(0.5).Repr(), "0.5");
  EXPECT_EQ(ArgValue("edge").Repr(), "'edge'");
  EXPECT_EQ(ArgValue({1, 2}).Repr(), "(1, 2)");
  EXPECT_EQ(ArgValue({7}).Repr(), "(7,)");
  EXPECT_EQ(ArgValue(3).set_repr("np.int64(3)").Repr(), "np.int64(3)");
  EXPECT_EQ(ArgValue::Other("<object>").type(), ArgValue::Type::kOther);
}

}  // namespace
}  // namespace stoker
