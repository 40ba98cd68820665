#pragma once
// A configuration as the surrogate's input vector (SearchSpace::encode_into).
#include <Eigen/Core>

#include "core/space.hpp"

namespace autotune {

inline Eigen::VectorXd encode(const SearchSpace& space, const Config& c) {
  Eigen::VectorXd x(static_cast<Eigen::Index>(space.encoded_dims()));
  space.encode_into(c, x.data());
  return x;
}

}  // namespace autotune
