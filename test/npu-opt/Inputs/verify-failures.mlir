// An expectation that is never produced.
func.func @ok(%a: i32) -> i32 {
  // expected-error@+1 {{this is never emitted}}
  return %a : i32
}

// -----

// A diagnostic nobody expected.
func.func @unexpected() -> i32 {
  return
}

// -----

// The right message on the wrong line is both unexpected and unmatched.
func.func @wrong_line() -> i32 {
  // expected-error@+2 {{has 0 operands}}
  return
}

// -----

// The error is expected but its note is not.
func.func @twice() {
  return
}
// expected-error@+1 {{redefinition of symbol named 'twice'}}
func.func @twice() {
  return
}

// -----

// The right line with a different severity does not match.
func.func @severity() -> i32 {
  // expected-warning@+1 {{has 0 operands}}
  return
}
