func.func @ok(%a: i32) -> i32 {
  return %a : i32
}
// -----
func.func @bad_return() -> i32 {
  return
}
// -----
func.func @ok2(%a: i32) -> i32 {
  return %a : i32
}
// -----
func.func @bad_syntax(%a: i32) -> i32 {

  %b = arith.addi %a : i32
  return %b : i32
}
