// The Eigen integration of mixprec (opt-in; needs Eigen 3.4):
//
//   eigen/numtraits.hpp   every minifloat as an Eigen scalar; mixed arithmetic with float
//   eigen/cast.hpp        .cast<>() between float and mixprec types on the bulk path
//   eigen/matrix.hpp      mixprec::matrix as Eigen maps and copies
//   eigen/gemm.hpp        gemm and matmul on Eigen matrices: exact products, float accumulation
#pragma once

#include "cast.hpp"
#include "gemm.hpp"
#include "matrix.hpp"
#include "numtraits.hpp"
