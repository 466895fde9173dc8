module @dynshape {
  func.func public @main(%arg0: tensor<?x4xf32> {dynshape.dim_symbols = ["s31", ""]}, %arg1: tensor<?xi64> {dynshape.dim_symbols = ["s31"]}, %arg2: tensor<?x4xf32> {dynshape.dim_symbols = ["s50", ""]}) -> tensor<?x4xf32> {
    %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?x4xf32>) -> tensor<i32>
    %1 = stablehlo.get_dimension_size %arg2, dim = 0 : (tensor<?x4xf32>) -> tensor<i32>
    %2 = stablehlo.reshape %0 : (tensor<i32>) -> tensor<1xi32>
    %c = stablehlo.constant dense<1> : tensor<i32>
    %3 = stablehlo.reshape %c : (tensor<i32>) -> tensor<1xi32>
    %4 = stablehlo.concatenate %2, %3, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %5 = stablehlo.dynamic_reshape %arg1, %4 : (tensor<?xi64>, tensor<2xi32>) -> tensor<?x1xi64>
    %c_0 = stablehlo.constant dense<4> : tensor<i32>
    %6 = stablehlo.reshape %c_0 : (tensor<i32>) -> tensor<1xi32>
    %7 = stablehlo.concatenate %2, %6, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %8 = stablehlo.dynamic_broadcast_in_dim %5, %7, dims = [0, 1] : (tensor<?x1xi64>, tensor<2xi32>) -> tensor<?x4xi64>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %9 = stablehlo.reshape %1 : (tensor<i32>) -> tensor<1xi32>
    %10 = stablehlo.concatenate %9, %6, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %11 = stablehlo.dynamic_broadcast_in_dim %cst, %10, dims = [] : (tensor<f32>, tensor<2xi32>) -> tensor<?x4xf32>
    %12 = stablehlo.concatenate %2, %6, %3, dim = 0 : (tensor<1xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<3xi32>
    %13 = stablehlo.dynamic_reshape %8, %12 : (tensor<?x4xi64>, tensor<3xi32>) -> tensor<?x4x1xi64>
    %14 = stablehlo.dynamic_iota %7, dim = 1 : (tensor<2xi32>) -> tensor<?x4xi64>
    %15 = stablehlo.dynamic_reshape %14, %12 : (tensor<?x4xi64>, tensor<3xi32>) -> tensor<?x4x1xi64>
    %16 = stablehlo.concatenate %13, %15, dim = 2 : (tensor<?x4x1xi64>, tensor<?x4x1xi64>) -> tensor<?x4x2xi64>
    %17 = "stablehlo.scatter"(%11, %16, %arg0) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0, 1], scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 2>, unique_indices = false}> ({
    ^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):
      %27 = stablehlo.add %arg3, %arg4 : tensor<f32>
      stablehlo.return %27 : tensor<f32>
    }) : (tensor<?x4xf32>, tensor<?x4x2xi64>, tensor<?x4xf32>) -> tensor<?x4xf32>
    %18 = stablehlo.dynamic_broadcast_in_dim %cst, %10, dims = [] : (tensor<f32>, tensor<2xi32>) -> tensor<?x4xf32>
    %cst_1 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %19 = stablehlo.dynamic_broadcast_in_dim %cst_1, %7, dims = [] : (tensor<f32>, tensor<2xi32>) -> tensor<?x4xf32>
    %20 = stablehlo.multiply %arg0, %19 : tensor<?x4xf32>
    %21 = stablehlo.dynamic_reshape %8, %12 : (tensor<?x4xi64>, tensor<3xi32>) -> tensor<?x4x1xi64>
    %22 = stablehlo.dynamic_iota %7, dim = 1 : (tensor<2xi32>) -> tensor<?x4xi64>
    %23 = stablehlo.dynamic_reshape %22, %12 : (tensor<?x4xi64>, tensor<3xi32>) -> tensor<?x4x1xi64>
    %24 = stablehlo.concatenate %21, %23, dim = 2 : (tensor<?x4x1xi64>, tensor<?x4x1xi64>) -> tensor<?x4x2xi64>
    %25 = "stablehlo.scatter"(%18, %24, %20) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0, 1], scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 2>, unique_indices = false}> ({
    ^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):
      %27 = stablehlo.add %arg3, %arg4 : tensor<f32>
      stablehlo.return %27 : tensor<f32>
    }) : (tensor<?x4xf32>, tensor<?x4x2xi64>, tensor<?x4xf32>) -> tensor<?x4xf32>
    %26 = stablehlo.add %17, %25 : tensor<?x4xf32>
    return %26 : tensor<?x4xf32>
  }
}
