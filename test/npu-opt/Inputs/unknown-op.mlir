func.func @f() {
  "cce.no_such_op"() : () -> ()
  return
}
