// Status helpers shared by every module: early-return macros for absl::Status / StatusOr.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define JLLM_CONCAT_INNER_(a, b) a##b
#define JLLM_CONCAT_(a, b) JLLM_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function if `expr` is not OK.
#define RETURN_IF_ERROR(expr)                      \
  do {                                             \
    ::absl::Status jllm_status_ = (expr);          \
    if (!jllm_status_.ok()) return jllm_status_;   \
  } while (0)

// `ASSIGN_OR_RETURN(auto x, Foo())` binds the value or returns the error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(JLLM_CONCAT_(jllm_statusor_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                           \
  if (!tmp.ok()) return tmp.status();          \
  lhs = std::move(tmp).value()
