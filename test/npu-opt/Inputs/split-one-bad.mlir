func.func @good(%a: i32) -> i32 {
  return %a : i32
}
// -----
func.func @bad() -> i32 {
  return
}
