// TemplateJson writes JSON as Python's json.dumps(ensure_ascii=False) does, which is what the
// chat template's tojson filter produces. Expected strings are json.dumps's documented output.
#include "runtime/tokenizer/template_json.h"

#include "gtest/gtest.h"

namespace jllm::runtime {
namespace {

using J = nlohmann::ordered_json;

TEST(TemplateJsonTest, SeparatorsAndKeyOrder) {
  EXPECT_EQ(TemplateJson(J::parse(R"({"b": 1, "a": [true, null, "x"], "c": {}})")),
            R"({"b": 1, "a": [true, null, "x"], "c": {}})");
  EXPECT_EQ(TemplateJson(J::parse("[]")), "[]");
  EXPECT_EQ(TemplateJson(J::parse(R"({"x": [[], {"y": -2}]})")), R"({"x": [[], {"y": -2}]})");
}

TEST(TemplateJsonTest, StringsAndNumbers) {
  // json.dumps("é\n\t\"\\\x01/", ensure_ascii=False) == '"é\\n\\t\\"\\\\\\u0001/"'
  EXPECT_EQ(TemplateJson(J("\u00e9\n\t\"\\\x01/")), "\"\u00e9\\n\\t\\\"\\\\\\u0001/\"");
  EXPECT_EQ(TemplateJson(J::parse("1.5")), "1.5");
  EXPECT_EQ(TemplateJson(J::parse("1.0")), "1.0");  // json.dumps(1.0) == '1.0'
  EXPECT_EQ(TemplateJson(J::parse("12345678901234")), "12345678901234");
}

}  // namespace
}  // namespace jllm::runtime
