func.func @wrong_result_count() -> i32 {
  return
}
