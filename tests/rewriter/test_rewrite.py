"""Tests of common/cusim/tools/cusim_rewrite.py (the .cu -> C++ source rewriter).

Text-level tests call the rewriter in-process; CLI tests run it as a program; compile
tests pass its output to the C++ compiler (against tests/rewriter/stub/cuda_runtime.h, a
minimal stand-in for the cusim runtime) and check diagnostics and run-time behaviour; the
CMake test builds a small project through cusim_target_cuda_sources().

Run: python3 -m unittest discover -s tests/rewriter -v
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
TOOL = os.path.join(ROOT, "common", "cusim", "tools", "cusim_rewrite.py")
CMAKE_MODULE = os.path.join(ROOT, "common", "cusim", "cmake", "CusimRewrite.cmake")
STUB = os.path.join(HERE, "stub")
CASES = os.path.join(HERE, "cases")

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(TOOL))
import cusim_rewrite  # noqa: E402

CXX = os.environ.get("CUSIM_TEST_CXX") or shutil.which("g++") or shutil.which("c++")
CMAKE = os.environ.get("CUSIM_TEST_CMAKE") or shutil.which("cmake")
PATH = "/src/lab.cu"
LAMBDA = "[&](const auto&... cusim_arg_) { %s(cusim_arg_...); }"


ANCHOR = re.compile(r" \(void\)&::cusim::detail::kernel_anchor<[^;]*>;")
# The companion declaration after each kernel declaration (cusim_kernel_id_<name>), one line.
COMPANION = re.compile(r" (?:template <[^\n]*?> )?auto cusim_kernel_id_\w+\([^\n]*?\)>;")


def rw(src, path=PATH, anchors=False):
    """Rewrite `src`; fail on rewrite errors; return the output without the #line header (and,
    unless `anchors`, without the kernel registrations at the top of kernel bodies and the
    companion declarations after kernel declarations)."""
    out, errors = cusim_rewrite.rewrite(src, path)
    if errors:
        raise AssertionError("unexpected rewrite errors: %r" % errors)
    header = '#line 1 "%s"\n' % path
    assert out.startswith(header), out[:80]
    out = out[len(header):]
    return out if anchors else COMPANION.sub("", ANCHOR.sub("", out))


def errors_of(src):
    _out, errors = cusim_rewrite.rewrite(src, PATH)
    return errors


def launch(cfg, line, name, kid, args, callee=None):
    """The expected replacement of a one-line launch."""
    text = '::cusim::launch(::cusim::launch_config(%s), "%s", %d, "%s", %s, %s' % (
        cfg, PATH, line, name, kid, LAMBDA % (callee or name))
    return text + (", " + args if args else "") + ")"


def kid(name):
    return "reinterpret_cast<const void*>(&%s)" % name


def cxx_kid(name):
    """The kernel id the compiler resolves (the rewriter did not find a unique declaration)."""
    return "CUSIM_KERNEL_ID(%s)" % name


def deduced_kid(name):
    """The kernel id of a launch resolved through the kernel's companion declaration."""
    i = max(name.rfind("::") + 2, 0) if "::" in name else 0
    base = name[i:]
    call = name[:i] + "cusim_kernel_id_" + base
    return ("::cusim::detail::deduced_kernel(CUSIM_KERNEL_ID(%s), []<class... cusim_t_>() -> const void* { "
            "if constexpr (requires(const cusim_t_&... cusim_a_) { %s(cusim_a_...); }) "
            "return decltype(%s(::std::declval<const cusim_t_&>()...))::id(); else return nullptr; })"
            % (name, call, call))


def marker_line(path, marker="EXPECT-ERROR"):
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if marker in line:
                return number
    raise AssertionError("no %s marker in %s" % (marker, path))


# ----------------------------------------------------------------------------------------
class TokenizerTest(unittest.TestCase):
    def kinds(self, src):
        toks, _pp = cusim_rewrite.tokenize(src)
        return [(t.kind, t.text) for t in toks]

    def test_launch_token_and_single_greater(self):
        self.assertEqual(self.kinds("k<<<a>>>"), [
            ("id", "k"), ("launch", "<<<"), ("id", "a"),
            ("punct", ">"), ("punct", ">"), ("punct", ">")])

    def test_operator_shift_with_template_args_is_not_a_launch(self):
        kinds = self.kinds("operator<<<T>(s, t)")
        self.assertEqual(kinds[:3], [("id", "operator"), ("punct", "<<"), ("punct", "<")])

    def test_literals_and_comments_are_single_tokens(self):
        src = 'a "x<<<y>>>" \'<\' R"d(k<<<1,1>>>() )" )d" u8"s" // k<<<1,1>>>()\n /* k<<< */ b'
        self.assertEqual(self.kinds(src), [
            ("id", "a"), ("str", '"x<<<y>>>"'), ("chr", "'<'"),
            ("str", 'R"d(k<<<1,1>>>() )" )d"'), ("str", 'u8"s"'), ("id", "b")])

    def test_numbers(self):
        self.assertEqual([t for k, t in self.kinds("1'000 1.5e-3f 0x1p+3 .5")],
                         ["1'000", "1.5e-3f", "0x1p+3", ".5"])

    def test_preprocessor_lines_with_continuations(self):
        src = "#define L(k) \\\n  k<<<1, 1>>>()\nint x; # not at line start\n"
        toks, pp = cusim_rewrite.tokenize(src)
        self.assertEqual(len(pp), 1)
        self.assertEqual(src[pp[0][0]:pp[0][1]], "#define L(k) \\\n  k<<<1, 1>>>()")
        self.assertEqual(toks[0].text, "int")
        self.assertEqual(toks[0].line, 3)

    def test_line_numbers_across_multiline_tokens(self):
        toks, _ = cusim_rewrite.tokenize('/* a\nb */ x R"(1\n2)" y\n// c \\\n d\nz')
        self.assertEqual([(t.text, t.line) for t in toks if t.kind == "id"],
                         [("x", 2), ("y", 3), ("z", 6)])


# ----------------------------------------------------------------------------------------
class LaunchTest(unittest.TestCase):
    def test_basic_launch(self):
        src = "__global__ void k(int* p);\nvoid h(int* p) { k<<<g, b>>>(p); }\n"
        self.assertEqual(rw(src), "__global__ void k(int* p);\nvoid h(int* p) { %s; }\n"
                         % launch("g, b", 2, "k", kid("k"), "p"))

    def test_spacing_variants(self):
        for text in ("k<<<g,b>>>(p)", "k <<< g , b >>> ( p )", "k<<<g, b>>> (p)",
                     "k\t<<<g,\tb>>>(p)"):
            with self.subTest(text=text):
                out = rw(text + ";")
                self.assertTrue(out.startswith("::cusim::launch(::cusim::launch_config(g"), out)
                self.assertIn(LAMBDA % "k", out)
                self.assertRegex(out, r"\}, +p *\);$")

    def test_two_three_four_config_arguments(self):
        self.assertIn("launch_config(g, b)", rw("k<<<g, b>>>();"))
        self.assertIn("launch_config(g, b, smem)", rw("k<<<g, b, smem>>>();"))
        self.assertIn("launch_config(g, b, 0, stream)", rw("k<<<g, b, 0, stream>>>();"))
        self.assertIn("launch_config(dim3(n, (m + 1) / 2), dim3(16, 16), sizeof(float) * 2)",
                      rw("k<<<dim3(n, (m + 1) / 2), dim3(16, 16), sizeof(float) * 2>>>();"))

    def test_zero_kernel_arguments_have_no_trailing_comma(self):
        self.assertEqual(rw("k<<<1, 1>>>();"), launch("1, 1", 1, "k", cxx_kid("k"), "") + ";")
        out = rw("k<<<1, 1>>>( /* none */ );")
        self.assertTrue(out.endswith("} /* none */ );"), out)

    def test_arguments_are_copied_verbatim(self):
        out = rw('k<<<1, 1>>>(a[i], f(x, y), "s,)", \')\', [](int v) { return v; });')
        self.assertTrue(out.endswith(
            '}, a[i], f(x, y), "s,)", \')\', [](int v) { return v; });'), out)

    def test_shift_in_launch_configuration(self):
        self.assertIn("launch_config(n >> 5, 32 << 1)", rw("k<<<n >> 5, 32 << 1>>>(p);"))
        self.assertIn("launch_config((n>>5), b)", rw("k<<<(n>>5), b>>>(p);"))

    def test_shifts_and_templates_outside_launches_untouched(self):
        src = ("int a = x << 1 >> 2; int b = x<<1; bool c = a >> b > 1;\n"
               "std::vector<std::vector<std::pair<int, int>>> v; a >>= 1; b <<= 2;\n"
               "template <int N> struct S { static constexpr int v = (N >> 1); };\n"
               "std::ostream& operator<<<Foo>(std::ostream& o, Foo f);\n")
        self.assertEqual(rw(src), src)

    def test_comments_strings_and_preprocessor_untouched(self):
        src = ('// k<<<1, 1>>>(p);\n/* k<<<1,\n 1>>>(p); */\nconst char* s = "k<<<1, 1>>>(p)";\n'
               "char c = '<';\nauto r = R\"x(k<<<1,1>>>(p) )\" )x\";\n"
               "#if A <<< B\n#endif\n")
        self.assertEqual(rw(src), src)

    def test_qualified_names(self):
        out = rw("__global__ void k(int);\nvoid h() { ns::k<<<1, 1>>>(2); }")
        self.assertIn('"ns::k", %s, %s, 2)' % (kid("ns::k"), LAMBDA % "ns::k"), out)
        out = rw("__global__ void k(int);\nvoid h() { ::k<<<1, 1>>>(2); }")
        self.assertIn('"::k", %s, %s, 2)' % (kid("::k"), LAMBDA % "::k"), out)
        out = rw("void h() { a::b :: c<<<1, 1>>>(2); }")
        self.assertIn('"a::b :: c", %s, %s' % (cxx_kid("a::b :: c"), LAMBDA % "a::b :: c"), out)
        out = rw("void h() { return ::ns::Outer<int>::k<<<1, 1>>>(2); }")
        self.assertIn("return ::cusim::launch(", out)
        self.assertIn('"::ns::Outer<int>::k"', out)

    def test_dependent_template_name(self):
        out = rw("template <class P> void h() { P::template k<int><<<1, 1>>>(); }")
        self.assertIn('"P::template k<int>"', out)
        self.assertIn(LAMBDA % "P::template k<int>", out)

    def test_explicit_template_arguments(self):
        cases = {
            "k<float><<<1, 1>>>(p);": "k<float>",
            "k<float, Tile<4>><<<1, 1>>>(p);": "k<float, Tile<4>>",
            "k<Tile<Pair<int, 4>>><<<1, 1>>>(p);": "k<Tile<Pair<int, 4>>>",
            "k<Tile<Pair<int, 4> > ><<<1, 1>>>(p);": "k<Tile<Pair<int, 4> > >",
            "k<(8 > 4), sizeof(int)><<<1, 1>>>(p);": "k<(8 > 4), sizeof(int)>",
            "k<N << 1><<<1, 1>>>(p);": "k<N << 1>",
            "k<><<<1, 1>>>(p);": "k<>",
        }
        for src, name in cases.items():
            with self.subTest(src=src):
                out = rw(src)
                self.assertTrue(out.startswith("::cusim::launch("), out)
                self.assertIn('"%s"' % name, out)
                self.assertIn(LAMBDA % name, out)

    def test_name_string_is_whitespace_normalised(self):
        out = rw("k<float,\n      /* tile */ Tile<4>>\n<<<1, 1>>>(p);")
        self.assertIn('"k<float, Tile<4>>"', out)
        self.assertEqual(out.count("\n"), 2)

    def test_configuration_comments_are_dropped_and_lines_kept(self):
        out = rw("k<<<grid, // one block per row\n    block /* threads */>>>(p,\n  q);\nint x;")
        lines = out.split("\n")
        self.assertEqual(len(lines), 4)
        self.assertIn("launch_config(grid, block)", lines[0])
        self.assertEqual(lines[1], ", p,")
        self.assertEqual(lines[2], "  q);")
        self.assertEqual(lines[3], "int x;")

    def test_multiline_launch_keeps_every_line(self):
        src = ("void h() {\n"          # 1
               "  scale<<<dim3(4),\n"  # 2
               "    dim3(64),\n"       # 3
               "    0>>>(data,\n"      # 4
               "         n,\n"         # 5
               "         2.0f);\n"     # 6
               "  after();\n"          # 7
               "}\n")
        lines = rw(src).split("\n")
        self.assertEqual(len(lines), src.count("\n") + 1)
        self.assertTrue(lines[1].startswith("  ::cusim::launch(::cusim::launch_config("
                                            "dim3(4), dim3(64), 0)"), lines[1])
        self.assertIn('"%s", 2, "scale"' % PATH, lines[1])
        self.assertEqual(lines[2], "")
        self.assertEqual(lines[3], ", data,")
        self.assertEqual(lines[4], "         n,")
        self.assertEqual(lines[5], "         2.0f);")
        self.assertEqual(lines[6], "  after();")

    def test_launch_line_is_the_line_of_the_name(self):
        out = rw("\n\nk\n<<<1, 1>>>(p);")
        self.assertIn('"%s", 3, "k"' % PATH, out)

    def test_preprocessor_directive_inside_arguments(self):
        src = "k<<<1, 1>>>(a,\n#ifdef B\n  b\n#else\n  c\n#endif\n);\n"
        out = rw(src)
        self.assertIn("\n#ifdef B\n  b\n#else\n  c\n#endif\n);\n", out)
        self.assertEqual(out.count("\n"), src.count("\n"))

    def test_parenthesized_kernel_pointer(self):
        out = rw("(*table[i])<<<1, 1>>>(p);")
        self.assertIn('"(*table[i])", nullptr, %s, p)' % (LAMBDA % "(*table[i])"), out)

    def test_launch_inside_a_macro_argument(self):
        out = rw("CHECK((k<<<1, 1>>>(a, b), cudaGetLastError()));")
        self.assertEqual(out, "CHECK((" + launch("1, 1", 1, "k", cxx_kid("k"), "a, b")
                         + ", cudaGetLastError()));")

    def test_function_pointer_through_objects(self):
        for name in ("s.fn", "p->fns[i]", "this->k", "table[2]", "a.b->c"):
            with self.subTest(name=name):
                out = rw("__global__ void fn(int);\n%s<<<1, 1>>>(3);" % name)
                self.assertIn('"%s", nullptr, %s, 3)' % (name, LAMBDA % name), out)

    def test_several_launches_on_one_line(self):
        out = rw("a<<<1, 1>>>(x); b<<<2, 2>>>(y);")
        self.assertEqual(out, launch("1, 1", 1, "a", cxx_kid("a"), "x") + "; "
                         + launch("2, 2", 1, "b", cxx_kid("b"), "y") + ";")


class LaunchErrorTest(unittest.TestCase):
    def test_unbalanced_launch(self):
        errs = errors_of("void h() {\n  k<<<1, 1(p);\n}\n")
        self.assertEqual(len(errs), 1)
        self.assertEqual(errs[0][0], 2)
        self.assertIn("no matching '>>>'", errs[0][1])

    def test_separated_greater_signs_do_not_close_a_launch(self):
        errs = errors_of("k<<<a, b> >>(p);")
        self.assertIn("no matching '>>>'", errs[0][1])

    def test_unbalanced_launch_at_end_of_file(self):
        errs = errors_of("\n\nk<<<1, 1")
        self.assertEqual([e[0] for e in errs], [3])

    def test_one_configuration_argument(self):
        errs = errors_of("\nk<<<n>>>(p);")
        self.assertEqual(errs[0][0], 2)
        self.assertIn("1 launch configuration argument", errs[0][1])
        self.assertIn("2 to 4", errs[0][1])

    def test_five_and_zero_configuration_arguments(self):
        self.assertIn("5 launch configuration arguments", errors_of("k<<<a, b, c, d, e>>>(p);")[0][1])
        self.assertIn("0 launch configuration arguments", errors_of("k<<<>>>(p);")[0][1])
        self.assertIn("empty", errors_of("k<<<a, , c>>>(p);")[0][1])

    def test_missing_argument_list(self):
        errs = errors_of("k<<<1, 1>>>;")
        self.assertIn("expected '('", errs[0][1])

    def test_no_kernel_name(self):
        self.assertIn("not preceded by a kernel name", errors_of("x = <<<1, 1>>>(p);")[0][1])
        self.assertIn("call expression", errors_of("get(k)<<<1, 1>>>(p);")[0][1])

    def test_all_errors_are_reported_and_rewriting_continues(self):
        errs = errors_of("k<<<1>>>(p);\nint ok;\nk<<<1, 2, 3, 4, 5>>>(p);\n")
        self.assertEqual([e[0] for e in errs], [1, 3])


# ----------------------------------------------------------------------------------------
class KernelIdTest(unittest.TestCase):
    def kid_of(self, src, launch_text):
        out = rw(src + "\nvoid h() { " + launch_text + "; }\n")
        m = re.search(r'::cusim::launch\(.*?, "[^"]*", \d+, "[^"]*", (nullptr|CUSIM_KERNEL_ID\(.*?\)|'
                      r'::cusim::detail::deduced_kernel\(.*?else return nullptr; \}\)|'
                      r'reinterpret_cast<const void\*>\(&[^)]*\)), \[&\]', out)
        self.assertIsNotNone(m, out)
        return m.group(1)

    def test_unique_kernel(self):
        self.assertEqual(self.kid_of("__global__ void k(float* p);", "k<<<1, 1>>>(p)"), kid("k"))

    def test_declaration_and_definition_with_other_parameter_names(self):
        src = ("__global__ void k(const float* in, float* out, int n = 3);\n"
               "__global__ void k(const float* a, float* b, int count) {}\n")
        self.assertEqual(self.kid_of(src, "k<<<1, 1>>>(x, y, 2)"), kid("k"))

    def test_overloaded_kernel(self):
        src = "__global__ void k(float* p);\n__global__ void k(int* p);\n"
        self.assertEqual(self.kid_of(src, "k<<<1, 1>>>(p)"), deduced_kid("k"))

    def test_kernel_not_declared_in_this_file(self):
        self.assertEqual(self.kid_of("void k(float*);", "k<<<1, 1>>>(p)"), cxx_kid("k"))
        self.assertEqual(self.kid_of("", "other<<<1, 1>>>(p)"), cxx_kid("other"))

    def test_declarations_in_comments_strings_and_macros_do_not_count(self):
        src = ('__global__ void k(float* p);\n// __global__ void k(int* p);\n'
               'const char* s = "__global__ void k(int*)";\n#define K __global__ void k(int*)\n')
        self.assertEqual(self.kid_of(src, "k<<<1, 1>>>(p)"), kid("k"))

    def test_template_kernel(self):
        src = "template <typename T>\n__global__ void k(T* p);\n"
        self.assertEqual(self.kid_of(src, "k<<<1, 1>>>(p)"), deduced_kid("k"))
        self.assertEqual(self.kid_of(src, "k<float><<<1, 1>>>(p)"), kid("k<float>"))
        self.assertEqual(self.kid_of(src, "k<float, int><<<1, 1>>>(p)"), deduced_kid("k<float, int>"))

    def test_template_kernel_with_defaults_and_nested_arguments(self):
        src = "template <class T, int N = 4, class U = Pair<T, T>> __global__ void k(T* p);\n"
        self.assertEqual(self.kid_of(src, "k<Tile<Pair<int, 2>>><<<1, 1>>>(p)"),
                         kid("k<Tile<Pair<int, 2>>>"))
        self.assertEqual(self.kid_of(src, "k<float, 8><<<1, 1>>>(p)"), kid("k<float, 8>"))
        self.assertEqual(self.kid_of(src, "k<><<<1, 1>>>(p)"), deduced_kid("k<>"))

    def test_template_parameter_pack(self):
        src = "template <class... Ts> __global__ void k(Ts... xs);\n"
        self.assertEqual(self.kid_of(src, "k<int><<<1, 1>>>(1)"), deduced_kid("k<int>"))

    def test_companion_declarations(self):
        # After each declaration and definition: the template head and parameters as written.
        out = rw("template <class T, int N = 4>\n__global__ void k(T* p, int n = 1);\n"
                 "template <class T, int N>\n__global__ void k(T* p, int n) {}\n", anchors=True)
        self.assertEqual(out.count("\n"), 4, out)
        self.assertIn("void k(T* p, int n = 1); template <class T, int N = 4> auto cusim_kernel_id_k(T* p, int n = 1)"
                      " -> ::cusim::detail::kernel_ref<static_cast<void (*)(T* p, int n)>(&k<T, N>)>;\n", out)
        self.assertIn("} template <class T, int N> auto cusim_kernel_id_k(T* p, int n) -> "
                      "::cusim::detail::kernel_ref<static_cast<void (*)(T* p, int n)>(&k<T, N>)>;\n", out)
        # None where the kernel cannot be named; its launches keep the compiler's resolution.
        # An unnamed template parameter is named in the declaration itself, so it can be spelled.
        out = rw("template <class, int = 2, class...> __global__ void k(int* p) {}\n", anchors=True)
        self.assertIn("template <class cusim_tparam_0_, int cusim_tparam_1_ = 2, class... cusim_tparam_2_> "
                      "__global__ void k(int* p) { (void)&::cusim::detail::kernel_anchor<static_cast<void (*)"
                      "(int* p)>(&k<cusim_tparam_0_, cusim_tparam_1_, cusim_tparam_2_...>), (0)>;} template "
                      "<class cusim_tparam_0_, int cusim_tparam_1_ = 2, class... cusim_tparam_2_> auto "
                      "cusim_kernel_id_k(int* p)", out)
        out = rw("struct S { template <class T> friend __global__ void k(T* p); };\n"
                 "void h() { k<<<1, 1>>>(p); }\n", anchors=True)
        self.assertNotIn("deduced_kernel", out)
        self.assertIn(cxx_kid("k"), out)

    def test_function_pointer_template_parameters(self):
        # Named: the name is found inside the declarator's parentheses; unnamed: a name is put there.
        out = rw("template <int (*F)(int), void (S::*)(), int (&)[4]> __global__ void k(int* p) {}\n",
                 anchors=True)
        self.assertIn("template <int (*F)(int), void (S::*cusim_tparam_0_ )(), int (&cusim_tparam_1_ )[4]> "
                      "__global__ void k(int* p) { (void)&::cusim::detail::kernel_anchor<static_cast<void (*)"
                      "(int* p)>(&k<F, cusim_tparam_0_, cusim_tparam_1_>), (0)>;} template <int (*F)(int), "
                      "void (S::* cusim_tparam_0_ )(), int (& cusim_tparam_1_ )[4]> auto cusim_kernel_id_k(int* p)",
                      out)
        self.assertEqual(self.kid_of("template <int (*)(int)> __global__ void k(int* p);", "k<f><<<1, 1>>>(p)"),
                         kid("k<f>"))

    def test_kernel_defined_in_friend_declaration_is_refused(self):
        # nvcc: "A __global__ function or function template cannot be defined in a friend
        # declaration" (in a class or a class template, a kernel template too): one error line, at
        # the kernel's name; the cuda build confirms nvcc refuses tests/conformance/refused_friend_kernel.cu.
        for src, line in (("struct S {\n  friend __global__ void __launch_bounds__(32) k(S s) {}\n};\n", 2),
                          ("template <class T>\nstruct S {\n  friend __global__\n  void k(S s) { }\n};\n", 4),
                          ("struct S {\n  template <class T> friend __global__ void k(T* p, S s) {}\n};\n", 2)):
            errors = errors_of(src)
            self.assertEqual(len(errors), 1, errors)
            self.assertEqual(errors[0][0], line, errors)
            self.assertIn("A __global__ function or function template cannot be defined in a friend declaration",
                          errors[0][1])
            self.assertIn("define the kernel after the class", errors[0][1])
        # Declared as a friend and defined after the class: an ordinary kernel, anchored there.
        out = rw("struct S {\n  friend __global__ void __launch_bounds__(64) k(S s);\n};\n"
                 "__global__ void __launch_bounds__(64) k(S s) {}\nvoid h(S s) { k<<<1, 1>>>(s); }\n", anchors=True)
        self.assertIn("kernel_anchor<static_cast<void (*)(S s)>(&k), (64)>", out)
        self.assertEqual(errors_of("struct S { friend __global__ void k(S s); };\n__global__ void k(S s) {}\n"), [])

    def test_explicit_specialization(self):
        # Anchored as itself (its own bound); k<float> names it through the primary template, whose
        # companion resolves deduced launches to it.
        src = ("template <class T> __global__ void k(T* p) {}\n"
               "template <> __global__ void __launch_bounds__(32) k<int>(int* p) {}\n"
               "template <> __global__ void k(float* p) {}\n")
        out = rw(src, anchors=True)
        self.assertIn("k<int>(int* p) { (void)&::cusim::detail::kernel_anchor<static_cast<void (*)(int* p)>"
                      "(&k<int>), (32)>;}\n", out)
        self.assertIn("k(float* p) { (void)&::cusim::detail::kernel_anchor<static_cast<void (*)(float* p)>"
                      "(&k), (0)>;}\n", out)
        self.assertEqual(out.count("cusim_kernel_id_k"), 1, out)
        self.assertEqual(self.kid_of(src, "k<float><<<1, 1>>>(p)"), kid("k<float>"))
        self.assertEqual(self.kid_of(src, "k<<<1, 1>>>(p)"), deduced_kid("k"))

    def test_deduced_launch_inside_a_macro_body(self):
        # The #define gets a variant taking the kernel id in front, on lines of its own followed by
        # #line; a use whose kernel the rewriter resolves through a companion calls the variant.
        src = ("#define LAUNCH(kernel, grid, ...) \\\n  kernel<<<grid, 32>>>(__VA_ARGS__)\n"
               "template <class T> __global__ void k(T* p);\n__global__ void u();\n"
               "void h(float* p) {\n  LAUNCH(k, 1, p);\n  LAUNCH(u, 1);\n  LAUNCH(k<float>, 1, p);\n}\n")
        out = rw(src)
        body = ("::cusim::launcher(::cusim::launch_config(grid, 32), __FILE__, __LINE__, CUSIM_KERNEL_NAME(kernel), "
                "%s, [&](const auto&... cusim_arg_) { kernel(cusim_arg_...); })(__VA_ARGS__)")
        self.assertIn("#define LAUNCH(kernel, grid, ...) \\\n  " + body % "CUSIM_KERNEL_ID(kernel)" +
                      "\n#define LAUNCH__cusim_kid(cusim_kid_0_, kernel, grid, ...) \\\n  " +
                      body % "cusim_kid_0_" + '\n#line 3 "%s"\ntemplate <class T>' % PATH, out)
        self.assertIn("  LAUNCH__cusim_kid((%s), k, 1, p);\n  LAUNCH(u, 1);\n  LAUNCH(k<float>, 1, p);\n"
                      % deduced_kid("k"), out)

    def test_non_template_launched_with_template_arguments(self):
        self.assertEqual(self.kid_of("__global__ void k(int);", "k<int><<<1, 1>>>(1)"), deduced_kid("k<int>"))

    def test_qualified_and_attributed_kernels(self):
        src = ("namespace ns {\n__global__ void __launch_bounds__(256, 2) k(float* p);\n}\n"
               'extern "C" __global__ void [[maybe_unused]] c_kernel(int n);\n')
        self.assertEqual(self.kid_of(src, "ns::k<<<1, 1>>>(p)"), kid("ns::k"))
        self.assertEqual(self.kid_of(src, "c_kernel<<<1, 1>>>(3)"), kid("c_kernel"))


# ----------------------------------------------------------------------------------------
class SharedTest(unittest.TestCase):
    def test_shared_in_a_kernel_defined_by_a_macro(self):
        src = ("#define DEF(NAME, T) \\\n__global__ void NAME(T* p) { \\\n  __shared__ T tile[32]; \\\n"
               "  tile[0] = *p; }\nDEF(k, int)\n")
        out = rw(src)
        self.assertEqual(out.count("\n"), src.count("\n"), out)
        self.assertIn("static char cusim_shared_key_0_; auto& tile = ::cusim::shared_var<T [32]>("
                      "&cusim_shared_key_0_, alignof(T [32])); \\\n", out)

    def test_shared_in_a_macro_outside_a_function_body(self):
        # The scope of the expansion is unknown: a plain __shared__ stays as written (per-worker
        # storage); an extern __shared__ is one error naming the macro.
        src = "#define TILE(T, n) __shared__ T n[32]\n"
        self.assertEqual(rw(src), src)
        errors = errors_of("int a;\n#define DYN(T, n) extern __shared__ T n[]\n")
        self.assertEqual(len(errors), 1, errors)
        self.assertEqual(errors[0][0], 2)
        self.assertIn("extern __shared__ in the body of macro 'DYN'", errors[0][1])

    def one(self, decl, scope="function"):
        if scope == "function":
            out = rw("__global__ void k() {\n" + decl + "\n}\n")
            return out[len("__global__ void k() {\n"):-len("\n}\n")]
        return rw(decl)

    def test_single_array(self):
        self.assertEqual(self.one("__shared__ float tile[32][33];"),
                         "static char cusim_shared_key_0_; auto& tile = ::cusim::shared_var"
                         "<float [32][33]>(&cusim_shared_key_0_, alignof(float [32][33]));")

    def test_scalar_and_unsigned_types(self):
        out = self.one("__shared__ unsigned long long total;")
        self.assertIn("auto& total = ::cusim::shared_var<unsigned long long>("
                      "&cusim_shared_key_0_, alignof(unsigned long long));", out)

    def test_several_declarators(self):
        out = self.one("__shared__ int a[4], b, *p, c[2][BLOCK / 2];")
        self.assertEqual(out.count("static char cusim_shared_key_"), 4)
        self.assertIn("auto& a = ::cusim::shared_var<int [4]>(&cusim_shared_key_0_, "
                      "alignof(int [4]));", out)
        self.assertIn("auto& b = ::cusim::shared_var<int>(&cusim_shared_key_1_, alignof(int));", out)
        self.assertIn("auto& p = ::cusim::shared_var<int *>(&cusim_shared_key_2_, alignof(int *));", out)
        self.assertIn("auto& c = ::cusim::shared_var<int [2][BLOCK / 2]>(&cusim_shared_key_3_,", out)

    def test_volatile_static_and_templates(self):
        out = self.one("static __shared__ volatile float sums[WARPS];")
        self.assertIn("auto& sums = ::cusim::shared_var<volatile float [WARPS]>(", out)
        self.assertNotIn("static __shared__", out)
        out = self.one("__shared__ Pair<int, Tile<float, 4>> cache[8], one;")
        self.assertIn("auto& cache = ::cusim::shared_var<Pair<int, Tile<float, 4>> [8]>(", out)
        self.assertIn("auto& one = ::cusim::shared_var< Pair<int, Tile<float, 4>> >(", out)
        out = self.one("__shared__ typename cub::BlockReduce<T, 128>::TempStorage temp;")
        self.assertIn("auto& temp = ::cusim::shared_var<typename cub::BlockReduce<T, 128>::"
                      "TempStorage>(", out)

    def test_alignment(self):
        self.assertIn("shared_var<float [4]>(&cusim_shared_key_0_, 16);",
                      self.one("__shared__ __align__(16) float v[4];"))
        self.assertIn("shared_var<float [4]>(&cusim_shared_key_0_, 2 * 8);",
                      self.one("__align__(2 * 8) __shared__ float v[4];"))
        self.assertIn("shared_var<double>(&cusim_shared_key_0_, 32);",
                      self.one("__shared__ alignas(32) double d;"))
        self.assertIn("shared_var<char [3]>(&cusim_shared_key_0_, 64);",
                      self.one("__shared__ char __attribute__((aligned(64))) c[3];"))

    def test_counter_is_unique_per_file(self):
        out = rw("__global__ void a() { __shared__ int x; }\n__global__ void b() { __shared__ int x; }\n")
        self.assertIn("cusim_shared_key_0_", out)
        self.assertIn("cusim_shared_key_1_", out)

    def test_multiline_declaration_keeps_lines(self):
        out = self.one("__shared__ float a[32],\n                  b[32];\nint after;")
        lines = out.split("\n")
        self.assertEqual(len(lines), 3)
        self.assertIn("auto& b = ", lines[0])
        self.assertEqual(lines[1], "")
        self.assertEqual(lines[2], "int after;")

    def test_class_defined_in_the_declaration(self):
        out = self.one("__shared__ struct {\n  float x[32]; // data\n} a, *pa;\nint after;")
        self.assertEqual(out.split("\n"), [
            "struct cusim_shared_type_0_ {",
            "  float x[32]; // data",
            "}; static char cusim_shared_key_1_; auto& a = ::cusim::shared_var<cusim_shared_type_0_>"
            "(&cusim_shared_key_1_, alignof(cusim_shared_type_0_)); static char cusim_shared_key_2_; "
            "auto& pa = ::cusim::shared_var<cusim_shared_type_0_ *>(&cusim_shared_key_2_, "
            "alignof(cusim_shared_type_0_ *));",
            "int after;"])
        out = self.one("__shared__ union\n{\n  int i;\n  float f;\n}\nu;\nint after;")
        self.assertEqual(out.split("\n"), [
            "union", "cusim_shared_type_0_ {", "  int i;", "  float f;",
            "}; static char cusim_shared_key_1_; auto& u = ::cusim::shared_var<cusim_shared_type_0_>"
            "(&cusim_shared_key_1_, alignof(cusim_shared_type_0_));", "", "int after;"])
        out = self.one("__shared__ struct Named { int v; } b[2];")
        self.assertTrue(out.startswith("struct Named { int v; }; static char cusim_shared_key_0_; "
                                       "auto& b = ::cusim::shared_var<Named [2]>("), out)

    def test_initializer_is_an_error(self):
        errs = errors_of("__global__ void k() {\n  __shared__ int x = 0;\n}")
        self.assertEqual(errs[0][0], 2)
        self.assertIn("cannot have an initializer", errs[0][1])

    def test_inside_member_function_lambda_and_nested_blocks(self):
        src = ("struct S {\n  __device__ void f() { if (c) { __shared__ int x; } }\n};\n"
               "namespace n { auto g = [] __device__ () { __shared__ int y; }; }\n")
        out = rw(src)
        self.assertIn("auto& x = ::cusim::shared_var<int>", out)
        self.assertIn("auto& y = ::cusim::shared_var<int>", out)

    def test_template_kernel_in_namespace_is_function_scope(self):
        src = ("namespace lab {\ntemplate <class T, int N>\n__global__ void __launch_bounds__(N) "
               "k(T* p) {\n  __shared__ T s[N];\n  extern __shared__ T dyn[];\n}\n}\n")
        out = rw(src)
        self.assertIn("auto& s = ::cusim::shared_var<T [N]>(&cusim_shared_key_0_, alignof(T [N]));", out)
        self.assertIn("T* dyn = reinterpret_cast<T*>(::cusim::dynamic_shared());", out)

    def test_extern_shared_in_function(self):
        self.assertEqual(self.one("extern __shared__ float dyn[];"),
                         "float* dyn = reinterpret_cast<float*>(::cusim::dynamic_shared());")
        self.assertEqual(self.one("extern __shared__ __align__(16) unsigned char raw[], more[];"),
                         "unsigned char* raw = reinterpret_cast<unsigned char*>(::cusim::dynamic_shared()); "
                         "unsigned char* more = reinterpret_cast<unsigned char*>(::cusim::dynamic_shared());")
        self.assertEqual(self.one("extern __shared__ volatile T rows[][4];"),
                         "volatile T (*rows)[4] = reinterpret_cast<volatile T (*)[4]>(::cusim::dynamic_shared());")

    def test_extern_shared_at_file_and_namespace_scope(self):
        expected = ("static thread_local float* dyn = nullptr; static const bool cusim_dyn_reg_0_ = "
                    "::cusim::register_dynamic_shared_pointer([]() -> void** { return "
                    "reinterpret_cast<void**>(&dyn); });")
        self.assertEqual(rw("extern __shared__ float dyn[];"), expected)
        self.assertEqual(rw("namespace a { namespace b {\nextern __shared__ float dyn[];\n} }"),
                         "namespace a { namespace b {\n" + expected + "\n} }")
        self.assertEqual(rw('extern "C" {\nextern __shared__ float dyn[];\n}'),
                         'extern "C" {\n' + expected + "\n}")
        # After a function body, the scope is the file again.
        out = rw("__global__ void k() { { } }\nextern __shared__ float dyn[];")
        self.assertIn(expected, out)

    def test_extern_shared_cv_qualified_at_file_scope(self):
        out = rw("extern __shared__ volatile int flags[];")
        self.assertIn("static thread_local volatile int* flags = nullptr;", out)
        self.assertIn("return (void**)(&flags);", out)

    def test_extern_shared_must_be_unsized_array(self):
        self.assertIn("unsized array", errors_of("extern __shared__ float x;")[0][1])
        self.assertIn("unsized array", errors_of("void f() { extern __shared__ float x[4]; }")[0][1])

    def test_file_scope_shared(self):
        self.assertEqual(rw("__shared__ float table[16];"), "static thread_local float table[16];")
        self.assertEqual(rw("static __shared__ int n;"), "static thread_local int n;")
        self.assertEqual(rw("namespace q { __shared__ int a, b[2]; }"),
                         "namespace q { static thread_local int a, b[2]; }")

    def test_scope_after_class_and_initializer_braces(self):
        src = ("struct P { int a; };\nint table[] = {1, 2};\nstruct Q f() { return {}; }\n"
               "enum class E : int { A, B };\ntemplate <class T> struct W : Base<decltype(g())> { };\n"
               "extern __shared__ float dyn[];\n")
        self.assertIn("static thread_local float* dyn = nullptr;", rw(src))

    def test_shared_in_strings_comments_and_macros_untouched(self):
        src = ('// __shared__ int x;\nconst char* s = "__shared__ int x;";\n'
               "#define SMEM __shared__ int x\n")
        self.assertEqual(rw(src), src)


# ----------------------------------------------------------------------------------------
class NoinlineTest(unittest.TestCase):
    def test_token_is_replaced(self):
        self.assertEqual(rw("__noinline__ __device__ int f();"),
                         "__attribute__((noinline)) __device__ int f();")

    def test_gnu_attribute_spelling_kept(self):
        src = "__attribute__((__noinline__)) int g(); int __noinline__x; // __noinline__\n"
        self.assertEqual(rw(src), src)


# ----------------------------------------------------------------------------------------
class CudaArchTest(unittest.TestCase):
    """__CUDA_ARCH__ is the virtual device's (900) where only nvcc's device pass compiles the
    code, and undefined everywhere else, as in nvcc's host pass."""

    def test_in_a_kernel_body(self):
        src = "__global__ void k(int* p) {\n#if __CUDA_ARCH__ >= 800\n  *p = 1;\n#endif\n}\n"
        self.assertIn("#if 900 >= 800\n", rw(src))

    def test_ifdef_and_defined_in_a_device_function(self):
        src = ("__device__ int f() {\n#ifdef __CUDA_ARCH__\n  return 1;\n#endif\n"
               "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 700\n  return 2;\n#endif\n  return 3;\n}\n")
        out = rw(src)
        self.assertIn("#if 1 /* cusim: ifdef __CUDA_ARCH__, device code */\n", out)
        self.assertIn("#if 1 && 900 < 700\n", out)
        self.assertEqual(out.count("\n"), src.count("\n"))  # every line keeps its number

    def test_host_device_and_host_code_keep_the_host_view(self):
        src = ("__host__ __device__ int f() {\n#ifdef __CUDA_ARCH__\n  return 1;\n#else\n  return 0;\n#endif\n}\n"
               "int main() {\n#if __CUDA_ARCH__ >= 700\n  return 1;\n#endif\n}\n")
        self.assertEqual(rw(src), src)

    def test_file_scope_guard_of_device_functions(self):
        src = ("#if __CUDA_ARCH__ >= 700\n#include <cuda/barrier>\n#endif\n"
               "#if __CUDA_ARCH__ >= 700\ntemplate <bool B>\n__device__ void f(int* p) { *p = B; }\n"
               "__device__ int g();\n#endif\n")
        out = rw(src)
        self.assertEqual(out.count("#if 900 >= 700\n"), 2, out)

    def test_file_scope_guard_with_host_code_is_left_alone(self):
        src = "#if __CUDA_ARCH__ >= 700\n__device__ void f() {}\nint host_only() { return 1; }\n#endif\n"
        self.assertEqual(rw(src), src)

    def test_a_dropped_branch_with_an_include_is_left_alone(self):
        # The device view would drop the #include the host code may need.
        src = "#ifndef __CUDA_ARCH__\n#include <iostream>\n#else\n__device__ void f() {}\n#endif\n"
        self.assertEqual(rw(src), src)

    def test_a_condition_on_other_macros_is_left_alone(self):
        src = "#if __CUDA_ARCH__ >= 700 && defined(USE_FAST)\n__device__ void f() {}\n#endif\n"
        self.assertEqual(rw(src), src)

    def test_clock_in_device_code_counts_cycles(self):
        src = ("__global__ void k(clock_t* t) { t[0] = clock(); t[1] = ::clock(); t[2] = std::clock(); }\n"
               "__host__ __device__ long f() { return clock(); }\nint main() { return (int)clock(); }\n")
        out = rw(src)
        self.assertEqual(out.count(cusim_rewrite.DEVICE_CLOCK), 2, out)
        self.assertIn("std::clock()", out)  # the C library's, named as such
        self.assertIn("long f() { return clock(); }", out)  # host and device: the host's view
        self.assertIn("int main() { return (int)clock(); }", out)

    def test_clock64_in_device_code_counts_cycles(self):
        src = "__device__ long long f() { return clock64(); }\n__host__ __device__ long long g() { return clock64(); }\n"
        out = rw(src)
        self.assertEqual(out.count(cusim_rewrite.DEVICE_CLOCK64), 1, out)
        self.assertIn("long long g() { return clock64(); }", out)

    def test_device_variable_initializer_is_not_a_body(self):
        src = ("__device__ int table[2] = {1, 2};\nint main() {\n#ifdef __CUDA_ARCH__\n  return 1;\n#endif\n"
               "  return 0;\n}\n")
        self.assertEqual(rw(src), src)


# ----------------------------------------------------------------------------------------
class VoidKernelCastTest(unittest.TestCase):
    """(void*)kernel, as NVIDIA's samples pass kernels to cudaLaunchCooperativeKernel, becomes
    ::cusim::kernel_pointer(kernel, "kernel"): the same pointer, with the parameter types kept."""
    K = ("__global__ void k(int* p, int n);\ntemplate <class T> __global__ void t(T* p);\n"
         "namespace ns { __global__ void q(); }\n")

    def body(self, src):
        return rw(self.K + src)[len(self.K):]

    def test_c_style_casts(self):
        self.assertEqual(self.body("f((void*)k, (void *) k, ( const void * )&k);"),
                         'f(::cusim::kernel_pointer(k, "k"), ::cusim::kernel_pointer(k, "k"), '
                         '::cusim::kernel_pointer(&k, "k"));')

    def test_template_and_qualified_kernels(self):
        self.assertEqual(self.body("a = (void*)t<float>; b = (void*)::ns::q;"),
                         'a = ::cusim::kernel_pointer(t<float>, "t<float>"); '
                         'b = ::cusim::kernel_pointer(::ns::q, "::ns::q");')

    def test_reinterpret_cast(self):
        self.assertEqual(self.body("g(reinterpret_cast<const void*>(&k));"),
                         'g(::cusim::kernel_pointer(&k, "k"));')

    def test_cast_over_two_lines_keeps_the_line_count(self):
        self.assertEqual(self.body("x = (void*)\n  k;\n"), 'x = ::cusim::kernel_pointer(k, "k")\n;\n')

    def test_other_casts_are_untouched(self):
        src = ("a = (void*)p; b = (void**)&k; c = (void*)k(1, 2); d = (int*)k; "
               "e = reinterpret_cast<void*>(k + 1); f = (char*)t<int>; g = sizeof(void*);\n")
        self.assertEqual(self.body(src), src)

    def test_kernels_of_included_headers_are_known(self):
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "kernels.cuh"), "w") as f:
                f.write("#pragma once\n__global__ void from_header(int* p) { *p = 1; }\n")
            src = os.path.join(tmp, "main.cu")
            with open(src, "w") as f:
                f.write('#include "kernels.cuh"\nvoid* p = (void*)from_header;\n')
            r = subprocess.run([sys.executable, TOOL, src, "-"], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn('void* p = ::cusim::kernel_pointer(from_header, "from_header");', r.stdout)
            # The header's kernel definition registers itself, so the header is rewritten too.
            self.assertIn('/.cusim_headers/kernels_', r.stdout)


# ----------------------------------------------------------------------------------------
class LineMappingTest(unittest.TestCase):
    def test_every_line_keeps_its_number(self):
        with open(os.path.join(CASES, "behaviour.cu")) as f:
            src = f.read()
        out = rw(src)
        in_lines = src.split("\n")
        out_lines = out.split("\n")
        self.assertEqual(len(out_lines), len(in_lines))
        changed = 0
        for number, (a, b) in enumerate(zip(in_lines, out_lines), 1):
            if a != b:
                changed += 1
                # A changed line is either a rewritten construct or a continuation line of
                # one (emptied or starting with the arguments).
                self.assertTrue("::cusim::" in b or "__attribute__((noinline))" in b
                                or "cusim_shared_type_" in b
                                or b.strip() == "" or b.lstrip().startswith(","),
                                "line %d: %r -> %r" % (number, a, b))
        self.assertGreater(changed, 20)

    def test_crlf_and_bom(self):
        out, errs = cusim_rewrite.rewrite("\ufeffk<<<1,\r\n 1>>>(p);\r\nint x;\r\n", PATH)
        self.assertEqual(errs, [])
        self.assertEqual(out.count("\n"), 4)
        self.assertFalse("\ufeff" in out)
        self.assertTrue(out.endswith("\r\nint x;\r\n"))


# ----------------------------------------------------------------------------------------
class CommandLineTest(unittest.TestCase):
    def run_tool(self, *args):
        return subprocess.run([sys.executable, TOOL] + list(args), capture_output=True, text=True)

    def test_writes_output_with_line_directive(self):
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "k.cu")
            dst = os.path.join(tmp, "gen", "sub", "k.cu.cpp")
            with open(src, "w") as f:
                f.write("k<<<1, 1>>>();\n")
            r = self.run_tool(src, dst)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(dst) as f:
                text = f.read()
            # nvcc's implicit <cuda_runtime.h> and macros come first, before the #line.
            self.assertTrue(text.startswith('#include <cusim/nvcc_prelude.h>\n#line 1 "%s"\n'
                                            % os.path.abspath(src)), text)
            self.assertIn('::cusim::launch(::cusim::launch_config(1, 1), "%s", 1, "k"' % src, text)

    def test_own_headers_with_shared_are_rewritten_and_included_from_the_copy(self):
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "inc"))
            with open(os.path.join(tmp, "inc", "smem.cuh"), "w") as f:
                f.write('#pragma once\n#include "plain.h"\n'
                        "template <class T> struct SharedMemory {\n"
                        "  operator T*() { extern __shared__ int s_[]; return (T*)s_; }\n};\n")
            with open(os.path.join(tmp, "inc", "plain.h"), "w") as f:
                f.write("#define PLAIN 1\n")
            src = os.path.join(tmp, "k.cu")
            dst = os.path.join(tmp, "gen", "k.cu.cpp")
            with open(src, "w") as f:
                f.write('#include "inc/plain.h"\n#include "inc/smem.cuh"\nint x;\n')
            dep = os.path.join(tmp, "gen", "k.d")
            r = self.run_tool(src, dst, "--depfile", dep)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(dst) as f:
                lines = f.read().split("\n")
            self.assertEqual(lines[2], '#include "inc/plain.h"', "a header without CUDA syntax stays")
            self.assertTrue(lines[3].startswith('#include "%s.headers/smem_' % dst), lines[3])
            copy = lines[3].split('"')[1]
            with open(copy) as f:
                text = f.read()
            self.assertTrue(text.startswith('#line 1 "%s"\n' % os.path.join(tmp, "inc", "smem.cuh")), text)
            self.assertIn("::cusim::dynamic_shared()", text)
            self.assertIn('#include "%s"' % os.path.join(tmp, "inc", "plain.h"), text,
                          "the copy lives elsewhere: its own includes become absolute")
            with open(dep) as f:
                self.assertIn(os.path.join(tmp, "inc", "smem.cuh"), f.read())

    def test_refused_cuda_header_is_one_error_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "r.cu")
            with open(src, "w") as f:
                f.write("#include <cstdio>\n#include <curand.h>\n#ifdef X\n#include <cufft.h>\n#endif\n")
            r = self.run_tool(src, os.path.join(tmp, "r.cpp"))
            self.assertEqual(r.returncode, 1)
            self.assertEqual(r.stderr, "%s:2: error: cusim: <curand.h> is not supported on the sim backend "
                             "(see docs/cusim.md)\n" % src, "only the unconditional include is named")

    def test_errors_name_file_and_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "bad.cu")
            dst = os.path.join(tmp, "bad.cpp")
            with open(dst, "w") as f:
                f.write("stale")
            with open(src, "w") as f:
                f.write("void h() {\n\n  k<<<1>>>(p);\n  k<<<1, 2(p);\n}\n")
            r = self.run_tool(src, dst)
            self.assertEqual(r.returncode, 1)
            lines = r.stderr.strip().split("\n")
            self.assertEqual(len(lines), 2, r.stderr)
            self.assertTrue(lines[0].startswith("%s:3: error: " % src), lines[0])
            self.assertTrue(lines[1].startswith("%s:4: error: " % src), lines[1])
            self.assertFalse(os.path.exists(dst), "a failed rewrite must not leave its output")

    def test_usage_and_missing_input(self):
        self.assertEqual(self.run_tool().returncode, 2)
        r = self.run_tool("/nonexistent/x.cu", "-")
        self.assertEqual(r.returncode, 1)
        self.assertIn("/nonexistent/x.cu: error: cannot read", r.stderr)


# ----------------------------------------------------------------------------------------
@unittest.skipUnless(CXX, "no C++ compiler found (set CUSIM_TEST_CXX)")
class CompileTest(unittest.TestCase):
    """The rewriter's output compiled against the stub runtime."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def rewrite_case(self, name):
        src = os.path.join(CASES, name)
        dst = os.path.join(self.tmp, name + ".cpp")
        r = subprocess.run([sys.executable, TOOL, src, dst], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        return src, dst

    def compile(self, cpp, *extra):
        return subprocess.run([CXX, "-std=c++20", "-I", STUB, "-I", CASES, cpp] + list(extra),
                              capture_output=True, text=True, cwd=self.tmp)

    def assert_error_at(self, stderr, src, line):
        pattern = r"^%s:%d:\d+: error: " % (re.escape(src), line)
        self.assertRegex(stderr, re.compile(pattern, re.M),
                         "expected an error at %s:%d in:\n%s" % (src, line, stderr))

    def test_error_after_multiline_launch_points_to_cu_line(self):
        src, cpp = self.rewrite_case("line_error.cu")
        r = self.compile(cpp, "-fsyntax-only")
        self.assertNotEqual(r.returncode, 0)
        line = marker_line(src)
        self.assert_error_at(r.stderr, src, line)
        self.assertIn("undeclared_variable", r.stderr)
        self.assertEqual(len(re.findall(r": error: ", r.stderr)), 1, r.stderr)

    def test_wrong_argument_count_fails_at_launch_line(self):
        src, cpp = self.rewrite_case("wrong_arity.cu")
        r = self.compile(cpp, "-fsyntax-only")
        self.assertNotEqual(r.returncode, 0)
        self.assert_error_at(r.stderr, src, marker_line(src))
        self.assertIn("too few arguments to function", r.stderr)
        self.assertIn("saxpy", r.stderr)

    def test_program_runs_as_cuda_would(self):
        src, cpp = self.rewrite_case("behaviour.cu")
        exe = os.path.join(self.tmp, "behaviour")
        r = self.compile(cpp, "-Wall", "-Werror", "-o", exe)
        self.assertEqual(r.returncode, 0, r.stderr)
        run = subprocess.run([exe], capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 0, run.stderr)
        got = dict(line.split("=", 1) for line in run.stdout.split("\n") if "=" in line)
        expected = {
            # float argument converted to the double parameter
            "double_value_x10": "25", "double_id": "1",
            "double_line": str(marker_line(src, "LAUNCH:double")),
            # __shared__: per-block storage shared by the block's threads (4 per block)
            "shared_counter": "4",
            "layout0": "1", "layout1": "12", "layout2": "0", "layout3": "1", "layout4": "7",
            "layout5": "1",
            # extern __shared__ at function, file and namespace scope
            "dyn_local": "1", "dyn_local_shmem": "64", "dyn_file": "1", "dyn_namespace": "1",
            # templates
            "fill_float_x10": "40", "fill_float_id": "1", "fill_deduced": "9",
            "fill_deduced_id": "1", "tile_bytes": "16", "nested_tile_bytes": "6",
            "nested_line": str(marker_line(src, "LAUNCH:nested") - 1),
            "nested_name": "tile_size<Tile<Tile<char, 2>, 3>>",
            # overloads resolve from the arguments, and so does the kernel id (the companions)
            "overload_int": "1", "overload_float": "2", "overload_id": "1",
            "negated": "-5", "qualified_id": "1",
            "zero_arg_calls": "6",
            "pointer_launch": "9", "pointer_id": "1",
            "noinline": "42", "shared_struct": "3", "member_launch": "-3",
        }
        self.assertEqual(got, expected)


# ----------------------------------------------------------------------------------------
@unittest.skipUnless(CXX and CMAKE, "cmake or a C++ compiler not found")
class CMakeIntegrationTest(unittest.TestCase):
    """cusim_target_cuda_sources() in a small project using the stub runtime."""

    def write(self, path, text):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(textwrap.dedent(text))

    def build(self, build, target="app"):
        r = subprocess.run([CMAKE, "--build", build, "--target", target, "-j", "2"],
                           capture_output=True, text=True)
        return r

    def test_build_rebuild_and_diagnostics(self):
        with tempfile.TemporaryDirectory() as tmp:
            proj = os.path.join(tmp, "proj")
            build = os.path.join(tmp, "build")
            self.write(os.path.join(proj, "CMakeLists.txt"), """\
                cmake_minimum_required(VERSION 3.22)
                project(rewrite_check LANGUAGES CXX)
                set(CMAKE_CXX_STANDARD 20)
                include("%s")
                add_library(cusim INTERFACE)
                target_include_directories(cusim INTERFACE "%s")
                add_library(cusim::cusim ALIAS cusim)
                add_executable(app)
                cusim_target_cuda_sources(app PRIVATE lab/app.cu lab/kernels.cuh)
                cusim_target_cuda_sources(app lab/app.cu)  # listed twice: one rule
                add_executable(broken)
                cusim_target_cuda_sources(broken lab/broken.cu)
                """ % (CMAKE_MODULE, STUB))
            self.write(os.path.join(proj, "lab", "lab.h"), "#define LAB_VALUE 40\n")
            # Compiles only if rewritten: __shared__ is no macro in the runtime.
            self.write(os.path.join(proj, "lab", "kernels.cuh"), """\
                #pragma once
                __device__ int plus_one(int v) { __shared__ int s; s = v; return s + 1; }
                """)
            self.write(os.path.join(proj, "lab", "app.cu"), """\
                #include <cstdio>
                #include <cuda_runtime.h>
                #include "lab.h"
                #include "kernels.cuh"
                __global__ void k(int* out) { *out = plus_one(LAB_VALUE) + 1; }
                int main() { int v = 0; k<<<1, 1>>>(&v); std::printf("%d\\n", v); }
                """)
            self.write(os.path.join(proj, "lab", "broken.cu"), """\
                #include <cuda_runtime.h>
                __global__ void k(int* out) {}
                int main() { k<<<1>>>(nullptr); }
                """)
            gen = ["-G", "Ninja"] if shutil.which("ninja") else []
            r = subprocess.run([CMAKE, "-S", proj, "-B", build, "-DCMAKE_CXX_COMPILER=" + CXX] + gen,
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            r = self.build(build)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            exe = os.path.join(build, "app")
            gen_cpp = os.path.join(build, "cusim_gen", "app", "lab", "app.cu.cpp")
            self.assertTrue(os.path.exists(gen_cpp))
            self.assertEqual(subprocess.run([exe], capture_output=True, text=True).stdout, "42\n")
            r = self.build(build)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertNotIn("cusim: rewriting", r.stdout, "an up-to-date build re-ran the rewriter")

            # A header change recompiles; a .cu change re-runs the rewriter.
            self.write(os.path.join(proj, "lab", "lab.h"), "#define LAB_VALUE 50\n")
            r = self.build(build)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertEqual(subprocess.run([exe], capture_output=True, text=True).stdout, "52\n")
            with open(os.path.join(proj, "lab", "app.cu"), "a") as f:
                f.write("int unused_marker_for_rebuild;\n")
            r = self.build(build)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("cusim: rewriting lab/app.cu", r.stdout)
            with open(gen_cpp) as f:
                self.assertIn("unused_marker_for_rebuild", f.read())

            # A rewrite error fails the build with the .cu file and line.
            r = self.build(build, "broken")
            self.assertNotEqual(r.returncode, 0)
            self.assertIn(os.path.join(proj, "lab", "broken.cu") + ":3: error: ", r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main()
