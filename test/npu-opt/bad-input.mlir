// Every kind of bad input ends in exactly one error line (with the
// location in the input when there is one), a non-zero exit, and no
// Python traceback. Input problems exit 1, command-line problems 2.
//
// "Exactly one line": a check prefix X written as
//   X-NOT: {{.}}        nothing before the line,
//   X: {{^}}...{{$}}    the line itself, whole,
//   X-NOT: {{.}}        nothing after it.

// Malformed IR.
// RUN: not npu-opt %S/Inputs/malformed.mlir 2>&1 | FileCheck %s --check-prefix=MALFORMED
// MALFORMED-NOT: {{.}}
// MALFORMED: {{^}}{{.*}}malformed.mlir:2:22: error: expected SSA operand{{$}}
// MALFORMED-NOT: {{.}}
// MALFORMED-NOT: Traceback

// An op of a dialect that is not loaded, and an unknown op of one of ours.
// RUN: not npu-opt %S/Inputs/unknown-dialect.mlir 2>&1 | FileCheck %s --check-prefix=DIALECT
// RUN: npu-opt %S/Inputs/unknown-dialect.mlir --allow-unregistered-dialect | FileCheck %s --check-prefix=ALLOWED
// DIALECT-NOT: {{.}}
// DIALECT: {{^}}{{.*}}unknown-dialect.mlir:2:12: error: operation being parsed with an unregistered dialect{{.*}}{{$}}
// DIALECT-NOT: {{.}}
// DIALECT-NOT: Traceback
// ALLOWED: "foo.bar"() : () -> ()
// RUN: not npu-opt %S/Inputs/unknown-op.mlir 2>&1 | FileCheck %s --check-prefix=UNKNOWN-OP
// UNKNOWN-OP-NOT: {{.}}
// UNKNOWN-OP: {{^}}{{.*}}unknown-op.mlir:2:3: error: unregistered operation 'cce.no_such_op' found in dialect ('cce'){{.*}}{{$}}
// UNKNOWN-OP-NOT: {{.}}
// UNKNOWN-OP-NOT: Traceback

// A verifier rule broken.
// RUN: not npu-opt %S/Inputs/verifier-error.mlir 2>&1 | FileCheck %s --check-prefix=VERIFIER
// VERIFIER-NOT: {{.}}
// VERIFIER: {{^}}{{.*}}verifier-error.mlir:2:3: error: 'func.return' op has 0 operands, but enclosing function (@wrong_result_count) returns 1{{$}}
// VERIFIER-NOT: {{.}}
// VERIFIER-NOT: Traceback

// A rule of our dialects (checked in Python after the parse) reads the same.
// RUN: not npu-opt %S/Inputs/ascend-rule.mlir 2>&1 | FileCheck %s --check-prefix=RULE
// RULE-NOT: {{.}}
// RULE: {{^}}{{.*}}ascend-rule.mlir:2:3: error: 'ascend.add' op {{.*}}element types{{.*}}{{$}}
// RULE-NOT: {{.}}

// Unknown passes, as flags and inside pipelines (also nested ones).
// RUN: not npu-opt %s --no-such-pass 2>&1 | FileCheck %s --check-prefix=FLAG
// FLAG-NOT: {{.}}
// FLAG: {{^}}npu-opt: error: unknown command line argument or pass '--no-such-pass' (see --help){{$}}
// FLAG-NOT: {{.}}
// FLAG-NOT: Traceback
// RUN: not npu-opt %s -p 'builtin.module(canonicalize,no-such-pass)' 2>&1 | FileCheck %s --check-prefix=PIPELINE
// PIPELINE-NOT: {{.}}
// PIPELINE: {{^}}npu-opt: error: invalid pass pipeline: unknown pass 'no-such-pass'{{$}}
// PIPELINE-NOT: {{.}}
// PIPELINE-NOT: Traceback
// RUN: not npu-opt %s -p 'builtin.module(func.func(cse,no-such-pass))' 2>&1 | FileCheck %s --check-prefix=NESTED
// NESTED: npu-opt: error: invalid pass pipeline: unknown pass 'no-such-pass' in 'func.func(cse,no-such-pass)'
// Our passes run on the module; nesting one is explained, not "unknown".
// RUN: not npu-opt %s -p 'builtin.module(func.func(npu-annotate-target))' 2>&1 | FileCheck %s --check-prefix=NESTED-OURS
// NESTED-OURS: npu-opt: error: invalid pass pipeline: pass 'npu-annotate-target' is a Python pass and must appear at the top level of builtin.module(...)
// RUN: not npu-opt %s -p 'builtin.module(canonicalize' 2>&1 | FileCheck %s --check-prefix=UNBALANCED
// UNBALANCED: npu-opt: error: invalid pass pipeline: unbalanced brackets
// RUN: not npu-opt %s --cse -p cse 2>&1 | FileCheck %s --check-prefix=BOTH
// BOTH: npu-opt: error: use either --pass-pipeline or individual pass flags, not both

// Bad pass options: unknown option names and values of the wrong type, for
// our passes and for upstream ones.
// RUN: not npu-opt %s --npu-annotate-target="colour=red" 2>&1 | FileCheck %s --check-prefix=OPT-NAME
// OPT-NAME-NOT: {{.}}
// OPT-NAME: {{^}}npu-opt: error: invalid pass pipeline: pass 'npu-annotate-target' has no option 'colour' (options: preset, override){{$}}
// OPT-NAME-NOT: {{.}}
// RUN: not npu-opt %s --npu-annotate-target="override=maybe" 2>&1 | FileCheck %s --check-prefix=OPT-BOOL
// OPT-BOOL: npu-opt: error: invalid pass pipeline: bad value for option 'override' of pass 'npu-annotate-target': expected a boolean, got 'maybe'
// RUN: not npu-opt %s -p 'builtin.module(npu-annotate-target{preset=ascend42})' 2>&1 | FileCheck %s --check-prefix=OPT-CHOICE
// OPT-CHOICE: npu-opt: error: invalid pass pipeline: bad value for option 'preset' of pass 'npu-annotate-target': expected one of ascend910, ascend910b, ascend310, got 'ascend42'
// RUN: not npu-opt %s --canonicalize="colour=red" 2>&1 | FileCheck %s --check-prefix=UP-NAME
// UP-NAME-NOT: {{.}}
// UP-NAME: {{^}}npu-opt: error: invalid pass pipeline: bad options in 'canonicalize{colour=red}': no such option colour{{$}}
// UP-NAME-NOT: {{.}}
// RUN: not npu-opt %s --canonicalize="max-iterations=many" 2>&1 | FileCheck %s --check-prefix=UP-TYPE
// UP-TYPE-NOT: {{.}}
// UP-TYPE: {{^}}npu-opt: error: invalid pass pipeline: bad options in 'canonicalize{max-iterations=many}': for the --max-iterations option: 'many' value invalid{{.*}}{{$}}
// UP-TYPE-NOT: {{.}}
// UP-TYPE-NOT: Traceback

// Other command-line problems.
// RUN: not npu-opt %S/Inputs/does-not-exist.mlir 2>&1 | FileCheck %s --check-prefix=NO-INPUT
// NO-INPUT-NOT: {{.}}
// NO-INPUT: {{^}}npu-opt: error: cannot read '{{.*}}does-not-exist.mlir': No such file or directory{{$}}
// NO-INPUT-NOT: {{.}}
// RUN: not npu-opt %s %s 2>&1 | FileCheck %s --check-prefix=TWO-INPUTS
// TWO-INPUTS: npu-opt: error: unexpected argument '{{.*}}bad-input.mlir' (only one input file is accepted)
// RUN: not npu-opt %s -o %t.missing-dir/out.mlir 2>&1 | FileCheck %s --check-prefix=NO-DIR
// NO-DIR: npu-opt: error: cannot write '{{.*}}out.mlir': no directory

func.func @f() {
  return
}
