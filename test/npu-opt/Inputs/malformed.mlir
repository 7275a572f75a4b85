func.func @f(%a: i32) -> i32 {
  %b = arith.addi %a, : i32
  return %b : i32
}
