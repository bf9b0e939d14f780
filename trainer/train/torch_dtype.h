// The libtorch dtype of a DType (schema/vocabularies.h): what train.dtype and a tool's --dtype
// compute in. Every trainer unit and bench that turns the config's or a flag's dtype into tensors
// goes through this one map. bfloat16 is the compute dtype only: its master weights stay float32
// (autocast, trainer/model/autocast.h). Header-only; thread-safe.
#pragma once

#include <c10/core/ScalarType.h>

#include "schema/vocabularies.h"

namespace baton {

inline c10::ScalarType TorchDtype(DType dtype) {
  switch (dtype) {
    case DType::kFloat64:
      return c10::kDouble;
    case DType::kBFloat16:
      return c10::kBFloat16;
    case DType::kFloat32:
      break;
  }
  return c10::kFloat;
}

}  // namespace baton
