#!/usr/bin/env python3
"""Rewrite a CUDA .cu file into C++ that g++ compiles against the cusim runtime.

Usage: cusim_rewrite.py INPUT.cu OUTPUT.cpp [--depfile FILE]   (OUTPUT "-" writes to stdout)

As nvcc does, a .cu file gets <cuda_runtime.h> and nvcc's macros in front (the output's first
line includes cusim/nvcc_prelude.h, before the #line). The program's own headers come along:
a quoted #include that names a file next to the including file is followed, and a header with
__shared__ or a launch is rewritten to OUTPUT.headers/<name>_<hash>.<ext> and included from
there by absolute path (its own #line names the original). --depfile writes every file read,
so a build re-runs the rewrite when one of them changes. An unconditional #include of a CUDA
header that cusim refuses (common/cusim/refused_headers.txt) is an error naming the header.

The tool tokenizes the source (comments, string/char/raw-string literals and
preprocessor lines are opaque tokens, so nothing inside them is ever touched)
and rewrites only CUDA-only syntax:

  k<<<G, B[, S[, ST]]>>>(args)   -> ::cusim::launch(::cusim::launch_config(G, B...),
                                     "<file>", <line>, "<k>", KID,
                                     [&](const auto&... cusim_arg_) { k(cusim_arg_...); },
                                     args)
  __shared__ T x[N];  (in a function)
                                 -> static char cusim_shared_key_<n>_;
                                    auto& x = ::cusim::shared_var<T[N]>(&cusim_shared_key_<n>_, ALIGN);
  extern __shared__ T x[];  (in a function)
                                 -> T* x = reinterpret_cast<T*>(::cusim::dynamic_shared());
  extern __shared__ T x[];  (file/namespace scope)
                                 -> static thread_local T* x = nullptr; plus a registration
                                    with ::cusim::register_dynamic_shared_pointer
  __shared__ T x[N];  (file/namespace scope) -> static thread_local T x[N];
  __noinline__                   -> __attribute__((noinline))
  __global__ void [__launch_bounds__(N)] k(PARAMS) { ...   (any kernel definition)
                                 -> the same, the body opening with
                                    (void)&::cusim::detail::kernel_anchor<
                                        static_cast<void (*)(PARAMS)>(&k<TPARAMS>), (N or 0)>;
                                    which registers each instantiation's address, name and N
  __global__ void k(PARAMS);  and  ... { body }   (any kernel declaration or definition)
                                 -> the same, followed on its last line by the companion
                                    TEMPLATE-HEAD auto cusim_kernel_id_k(PARAMS)
                                        -> ::cusim::detail::kernel_ref<...(&k<TPARAMS>)>;
                                    (declared only) which a launch that deduces its template
                                    arguments or picks an overload calls unevaluated for its
                                    kernel id: ::cusim::detail::deduced_kernel(KID, resolver)
  k<<<G, B>>>(ARGS)  inside a #define body
                                 -> ::cusim::launcher(::cusim::launch_config(G, B), __FILE__,
                                        __LINE__, NAME, KID, [&](...) {...})(ARGS)
  #define M(kernel, ...) ... kernel<<<...>>>(...) ...   (the kernel a parameter of the macro)
                                 -> the #define rewritten as above, then (own lines, then #line)
                                    #define M__cusim_kid(cusim_kid_0_, kernel, ...) with KID
                                    cusim_kid_0_; a use M(k, ...) whose k is resolved through
                                    a companion becomes M__cusim_kid((KID), k, ...)
  friend __global__ void k(C c) { ... }   (a kernel defined in a friend declaration)
                                 -> an error, as with nvcc: the kernel is defined after the class
  (void*)k, (const void*)&k, reinterpret_cast<void*>(k)   (k a __global__ function)
                                 -> ::cusim::kernel_pointer(k, "k")
                                    the same address, with k's parameter types recorded for
                                    cudaLaunchKernel / cudaLaunchCooperativeKernel on it

Every input line keeps its line number: the output starts with
`#line 1 "<absolute input path>"`, and a construct spanning several lines is
replaced on its first line followed by the newlines it spanned (kernel arguments
are copied verbatim, so they keep their own lines).  Errors are printed as
`FILE:LINE: error: MESSAGE` and the exit status is 1.

KID is reinterpret_cast<const void*>(&k) when k names exactly one __global__
function declared in this file (explicit template arguments included); else, for an
id-expression, CUSIM_KERNEL_ID(k) (the compiler's resolution: the address when k denotes one
function, else nullptr); else nullptr.
A void* cast is rewritten when its operand's last name is a __global__ function declared
in this file or in a header of the program it includes (followed as above).

Limitations (each fails loudly at compile time rather than silently):
  * Text inside preprocessor directives is rewritten only in #define bodies: launches, (void*)
    casts of a macro parameter, and __shared__ inside a function body the macro defines. A
    __shared__ elsewhere in a macro body (the scope of its expansion unknown) stays CUDA syntax
    (cusim defines __shared__ as static thread_local, per-worker storage, for what the rewriter
    does not see); an extern __shared__ there is an error naming the macro.  Headers found through -I directories rather than next to the including
    file are rewritten only if listed in cusim_target_cuda_sources().
  * Launch configuration arguments are counted at commas outside (), [] and {}: a
    template-id with a top-level comma in a configuration argument must be parenthesized.
  * A function-scope __shared__ becomes a reference initialised at its declaration, so
    it cannot sit directly under a case label (wrap the case in braces).
  * Scope tracking counts braces in the text; braces unbalanced across #if branches
    can misplace later file-scope declarations.
  * Column numbers in diagnostics on a rewritten line refer to the generated text; the
    file and line are the original ones.
"""

import bisect
import os
import re
import sys
import zlib

# ----------------------------------------------------------------------------------------
# Tokenizer
# ----------------------------------------------------------------------------------------

# Significant token kinds: 'id', 'num', 'str', 'chr', 'punct', 'other'.
# Whitespace, newlines, comments and preprocessor lines are not kept as tokens; the
# rewriter works on offsets into the original text and copies everything between
# rewritten spans verbatim.
#
# '>' is always a token of its own ('>>', '>=', '>>=' are several tokens): this makes
# '>>' closing two template argument lists and '>>>' closing a launch configuration
# uniform (three adjacent '>' tokens).  '<<<' is one token unless it follows the
# keyword 'operator' (operator<< with explicit template arguments).

_MASTER = re.compile(r"""
  (?P<nl>\r?\n)
| (?P<ws>(?:[ \t\f\v]|\\\r?\n)+)
| (?P<lc>//(?:\\\r?\n|[^\n])*)
| (?P<bc>/\*[\s\S]*?(?:\*/|\Z))
| (?P<raw>(?:u8|u|U|L)?R"(?P<delim>[^()\\\s"]{0,16})\()
| (?P<str>(?:u8|u|U|L)?"(?:[^"\\\n]|\\[\s\S])*"?)
| (?P<chr>(?:u8|u|U|L)?'(?:[^'\\\n]|\\[\s\S])*'?)
| (?P<id>[^\W\d]\w*)
| (?P<num>\.?\d(?:[eEpP][+-]|'\w|[\w.])*)
| (?P<launch><<<)
| (?P<punct>\.\.\.|->\*|<=>|<<=|::|->|\+\+|--|<<|<=|==|!=|&&|\|\||[-+*/%&|^!=]=|\#\#|\.\*|[][(){};:,.?~!+\-*/%^&|=<>\#])
| (?P<other>[\s\S])
""", re.X)

# A preprocessor directive: from '#' to the end of the line, with backslash
# continuations, block comments (which may span lines) and literals inside.
_PP = re.compile(r"""
\#(?:[^\n\\/"']
   |\\\r?\n
   |\\.
   |/\*[\s\S]*?\*/
   |//[^\n]*
   |/(?![/*])
   |"(?:[^"\\\n]|\\.)*"?
   |'(?:[^'\\\n]|\\.)*'?
   )*
""", re.X)


class Tok:
    """A significant token: kind, text, [start, end) offsets in the source, 1-based line."""

    __slots__ = ("kind", "text", "start", "end", "line")

    def __init__(self, kind, text, start, end, line):
        self.kind = kind
        self.text = text
        self.start = start
        self.end = end
        self.line = line

    def __repr__(self):
        return "Tok(%s %r @%d)" % (self.kind, self.text, self.line)


def tokenize(text):
    """Return (tokens, pp_spans): significant tokens and the [start, end) spans of
    preprocessor directives."""
    toks = []
    pp_spans = []
    pos = 0
    n = len(text)
    line = 1
    bol = True  # only whitespace/comments since the last newline
    match = _MASTER.match
    pp_match = _PP.match
    append = toks.append
    while pos < n:
        if bol and text[pos] == "#":
            m = pp_match(text, pos)
            end = m.end()
            pp_spans.append((pos, end))
            line += text.count("\n", pos, end)
            pos = end
            bol = False
            continue
        m = match(text, pos)
        kind = m.lastgroup
        end = m.end()
        if kind == "nl":
            line += 1
            bol = True
        elif kind in ("ws", "bc", "lc"):
            line += text.count("\n", pos, end)
        else:
            bol = False
            if kind == "raw":
                close = ")" + m.group("delim") + '"'
                cend = text.find(close, end)
                end = n if cend < 0 else cend + len(close)
                kind = "str"
            elif kind == "launch":
                if toks and toks[-1].text == "operator":
                    end = pos + 2  # operator<< followed by '<'
                    kind = "punct"
            tok_text = text[pos:end]
            append(Tok(kind, tok_text, pos, end, line))
            if kind == "str":
                line += tok_text.count("\n")
        pos = end
    return toks, pp_spans


# ----------------------------------------------------------------------------------------
# Rewriter
# ----------------------------------------------------------------------------------------

class RewriteError(Exception):
    def __init__(self, line, message):
        Exception.__init__(self, message)
        self.line = line
        self.message = message


# Things that look like function calls but are attributes/specifiers: skipped as a group.
_ATTR_CALLS = frozenset((
    "__attribute__", "__declspec", "alignas", "__align__", "__launch_bounds__",
    "__maxnreg__", "__cluster_dims__",
))
_ALIGN_CALLS = frozenset(("__align__", "alignas"))
# Keywords that never name a declared variable or kernel.
_KEYWORDS = frozenset("""
alignas alignof asm auto bool break case catch char char8_t char16_t char32_t class
concept const consteval constexpr constinit const_cast continue co_await co_return
co_yield decltype default delete do double dynamic_cast else enum explicit export
extern false float for friend goto if inline int long mutable namespace new noexcept
nullptr operator private protected public register reinterpret_cast requires return
short signed sizeof static static_assert static_cast struct switch template this
thread_local throw true try typedef typeid typename union unsigned using virtual void
volatile wchar_t while __restrict__ __restrict restrict __shared__ __global__
__device__ __host__ __constant__ __managed__ __forceinline__ __noinline__
""".split())
_STMT_KEYWORDS = frozenset((
    "return", "else", "do", "case", "default", "goto", "throw", "co_return", "co_yield",
    "if", "for", "while", "switch",
))
_CLASS_KEYS = frozenset(("class", "struct", "union", "enum"))
_HEAD_PREFIX = frozenset(("inline", "export", "typedef", "static", "constexpr", "extern"))


def _c_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def join_tokens(toks):
    """Token texts, separated by one space where the source had any gap between them."""
    out = []
    prev = None
    for t in toks:
        if prev is not None and prev.end != t.start:
            out.append(" ")
        out.append(t.text)
        prev = t
    return "".join(out)


class Rewriter:
    def __init__(self, text, path, id_base=0, macro_params=None):
        self.text = text
        self.path = path
        # Rewriting the body of a #define: its parameter names (a set), else None. Line breaks in
        # replacements are then continuation lines, and the launch site is the macro's use.
        self.macro_params = macro_params
        self._nl = "\\\n" if macro_params is not None else "\n"
        self.macro_name = None  # the #define's name, for messages
        self.toks, self.pp_spans = tokenize(text)
        self._pp_starts = [s for s, _ in self.pp_spans]
        self.edits = []  # (start, end, replacement)
        self.errors = []  # (line, message)
        self.counter = id_base  # distinct per file, so names of a header and its includer differ
        self._match = self._compute_matches()
        self._anchors = []  # (offset, text): kernel registrations, edits made by run()
        # Kernel names with a companion declaration (cusim_kernel_id_<name>) for every declaration
        # of theirs in this file, and names with a declaration that has none.
        self._companions = set()
        self._tparam_names = {}  # template parameter list (token range) -> _template_args result
        self._no_companion = set()
        self.kernels = self._scan_kernels()
        self._device_decls = None  # _device_only_declarations(), computed once
        self.header_kernels = set()  # kernel names declared in the program's headers (Program)
        # Macros whose body launches a kernel named by one of their parameters: name -> (offset of
        # the #define, parameter names, parameter of each such launch), this file's and (Program)
        # those of the headers read before it. See _macro and _macro_use.
        self.launch_macros = {}
        # In the variant of a #define body (_macro): the parameter naming the kernel of each launch
        # whose kernel id is the variant's own parameter cusim_kid_<n>_.
        self.kid_params = None

    # -- helpers ---------------------------------------------------------------------------

    def _compute_matches(self):
        """Index of the matching bracket for each (), [], {} token (None if unmatched)."""
        match = {}
        stack = []
        openers = {"(": ")", "[": "]", "{": "}"}
        for i, t in enumerate(self.toks):
            if t.kind != "punct":
                continue
            tx = t.text
            if tx in openers:
                stack.append(i)
            elif tx in (")", "]", "}"):
                # Pop to the nearest opener of the same kind; tolerate unbalanced input.
                for k in range(len(stack) - 1, -1, -1):
                    if openers[self.toks[stack[k]].text] == tx:
                        j = stack[k]
                        del stack[k:]
                        match[i] = j
                        match[j] = i
                        break
        return match

    def _pp_between(self, start, end):
        """True if a preprocessor directive starts in [start, end)."""
        k = bisect.bisect_left(self._pp_starts, start)
        return k < len(self._pp_starts) and self._pp_starts[k] < end

    def _skip_angle(self, i, limit):
        """toks[i] is '<': index of its matching '>' (nested <> and bracket groups
        skipped), or None."""
        depth = 0
        toks = self.toks
        k = i
        while k < limit:
            tx = toks[k].text
            if tx == "<":
                depth += 1
            elif tx == ">":
                depth -= 1
                if depth == 0:
                    return k
            elif tx in ("(", "[", "{"):
                m = self._match.get(k)
                if m is None or m < k:
                    return None
                k = m
            elif tx in (";", ")", "]", "}"):
                return None
            k += 1
        return None

    def _back_angle(self, i, lower):
        """toks[i] is '>': index of its matching '<' scanning backwards, or None."""
        depth = 0
        toks = self.toks
        k = i
        while k >= lower:
            tx = toks[k].text
            if tx == ">":
                depth += 1
            elif tx == "<":
                depth -= 1
                if depth == 0:
                    return k
            elif tx in (")", "]", "}"):
                m = self._match.get(k)
                if m is None or m > k:
                    return None
                k = m
            elif tx in (";", "(", "[", "{", "<<<"):
                return None
            k -= 1
        return None

    def _parameter_declarations(self, paren, close):
        """The parameter declarations between a function's parentheses, as written but without
        their default arguments (an empty list for `()`)."""
        toks = self.toks
        params = []
        for a, b in self._split_commas(paren + 1, close, True):
            items = []
            for q in range(a, b):
                if toks[q].text == "=":
                    break
                items.append(toks[q])
            params.append(join_tokens(items))
        return [] if params == [""] else params

    def _split_commas(self, lo, hi, angles):
        """Split toks[lo:hi] at top-level commas; returns lists of indices ranges
        [(a, b), ...].  With angles, '<' ... '>' groups are treated as brackets."""
        parts = []
        toks = self.toks
        start = lo
        k = lo
        while k < hi:
            tx = toks[k].text
            if tx in ("(", "[", "{"):
                m = self._match.get(k)
                if m is not None and m > k:
                    k = m
            elif angles and tx == "<":
                m = self._skip_angle(k, hi)
                if m is not None:
                    k = m
            elif tx == ",":
                parts.append((start, k))
                start = k + 1
            k += 1
        parts.append((start, hi))
        return parts

    def _newlines(self, start, end):
        return self.text.count("\n", start, end)

    def _edit(self, start, end, replacement):
        self.edits.append((start, end, replacement))

    def _next_id(self):
        n = self.counter
        self.counter += 1
        return n

    # -- kernel declarations (for the kernel id) ---------------------------------------------

    def _scan_kernels(self):
        """Map kernel base name -> set of signatures of its __global__ declarations in
        this file.  A signature is (template_info, parameter types)."""
        toks = self.toks
        n = len(toks)
        kernels = {}
        declared_bounds = {}  # (name, template info, parameter types) -> __launch_bounds__ argument
        # name -> the __launch_bounds__ argument of each primary kernel template of that name (None:
        # none, or one that names a template parameter). An explicit specialization that declares no
        # bound of its own keeps its primary template's: nvcc 13 gives
        # template <> __global__ void k(double*) the __launch_bounds__(64) of
        # template <class T> __global__ void __launch_bounds__(64) k(T*) (an H100 answered
        # tests/conformance/launch_bounds_specialized.cu on 2026-11-28).
        primary_bounds = {}
        for i, t in enumerate(toks):
            if t.kind != "id" or t.text != "__global__":
                continue
            # Template header: walk back to the previous declaration boundary.
            tinfo = None
            tparams = None  # token range of the template parameter list
            friend = False
            j = i - 1
            while j >= 0 and toks[j].text not in (";", "{", "}"):
                if toks[j].text == "friend":
                    friend = True
                if toks[j].text == "template" and j + 1 < i and toks[j + 1].text == "<":
                    close = self._skip_angle(j + 1, i)
                    if close is not None:
                        tinfo = self._template_info(j + 2, close)
                        tparams = (j + 2, close)
                    else:
                        tinfo = ("?", 0, 0, True)
                    break
                j -= 1
            # The declarator: the first '(' at top level that follows a name.
            k = i + 1
            paren = None
            bounds = None  # __launch_bounds__(...): token range of its arguments
            while k < n:
                tx = toks[k].text
                if tx in _ATTR_CALLS and k + 1 < n and toks[k + 1].text == "(":
                    m = self._match.get(k + 1)
                    if m is None:
                        break
                    if tx == "__launch_bounds__":
                        bounds = (k + 2, m)
                    k = m + 1
                    continue
                if tx == "[" and k + 1 < n and toks[k + 1].text == "[":
                    m = self._match.get(k)
                    if m is None:
                        break
                    k = m + 1
                    continue
                if tx == "(":
                    paren = k
                    break
                if tx in (";", "{", "}", "<<<"):
                    break
                k += 1
            if paren is None or paren == 0:
                continue
            close = self._match.get(paren)
            if close is None:
                continue
            prev = toks[paren - 1]
            spec = False
            name_at = paren - 1  # first token of the declarator-id (with explicit template arguments)
            if prev.kind == "id":
                name = prev.text
            elif prev.text == ">":
                lt = self._back_angle(paren - 1, i + 1)
                if lt is None or toks[lt - 1].kind != "id":
                    continue
                name = toks[lt - 1].text
                name_at = lt - 1
                spec = True
            else:
                continue
            if tparams is not None and tparams[0] == tparams[1]:
                spec = True  # template <> __global__ void k(int* p): the template arguments deduced
            sig = (tinfo, spec, self._param_signature(paren + 1, close))
            kernels.setdefault(name, set()).add(sig)
            if bounds is not None:
                args = self._split_commas(bounds[0], bounds[1], True)
                bound = join_tokens(toks[args[0][0]:args[0][1]]) if args and args[0][0] < args[0][1] else None
            else:
                bound = None
            key = (name, tinfo, sig[2])
            if bound is not None:
                declared_bounds[key] = bound
            else:
                bound = declared_bounds.get(key)
            if not spec and not friend and tparams is not None and tparams[0] < tparams[1]:
                names = {toks[q].text for q in range(tparams[0], tparams[1]) if toks[q].kind == "id"}
                own = bound
                if own is not None and names & set(re.findall(r"[A-Za-z_]\w*", own)):
                    own = None  # __launch_bounds__(N) of a template parameter: not one number
                primary_bounds.setdefault(name, set()).add(own)
            elif spec and bound is None and len(primary_bounds.get(name, ())) == 1:
                bound = next(iter(primary_bounds[name]))
            pasted = toks[paren - 2].text in ("##", "#")
            if not spec and not friend and tinfo != ("?", 0, 0, True) and not pasted:
                self._anchor(name, tparams, paren, close, bound)
                if self._companion(name, tparams, paren, close):
                    self._companions.add(name)
                else:
                    self._no_companion.add(name)
            elif spec and not friend and tinfo == ("", 0, 0, False) and not pasted:
                # An explicit specialization (template <> __global__ void k<float>(...)): its own
                # kernel with its own bound, anchored as itself. The primary template's companion
                # resolves deduced launches to it, as the compiler does.
                self._anchor(name, None, paren, close, bound, join_tokens(toks[name_at:paren]))
            elif friend:
                # A friend declaration redeclares a kernel (declared or defined at namespace scope,
                # where its companion is): it changes nothing the launches resolve. A friend
                # definition is not CUDA.
                if self.macro_params is None:
                    self._friend_definition(name, paren, close)
            else:
                self._no_companion.add(name)
        return kernels

    def _enclosing_brace(self, i):
        """Index of the '{' whose block holds toks[i], or None at file scope."""
        depth = 0
        for q in range(i - 1, -1, -1):
            tx = self.toks[q].text
            if tx == "}":
                depth += 1
            elif tx == "{":
                if depth == 0:
                    return q
                depth -= 1
        return None

    def _friend_definition(self, name, paren, close):
        """A kernel defined in a friend declaration (friend __global__ void k(C c) { ... }), in a class
        or a class template, a template kernel too: nvcc refuses it ("A __global__ function or
        function template cannot be defined in a friend declaration"), so cusim does as well, with
        one error line. A friend declaration whose definition is outside the class is an ordinary
        kernel (anchored at its definition)."""
        toks = self.toks
        n = len(toks)
        k = close + 1
        while k < n and toks[k].text not in ("{", ";", "}"):
            k += 1
        if k >= n or toks[k].text != "{":
            return
        self.errors.append((toks[paren - 1].line, (
            "A __global__ function or function template cannot be defined in a friend declaration "
            "(nvcc refuses it): keep 'friend __global__ void %s(...);' in the class and define the "
            "kernel after the class" % name)))

    def _declaration_start(self, i):
        """Index of the first token of the declaration or statement that toks[i] ends."""
        q = i - 1
        while q >= 0 and self.toks[q].text not in (";", "{", "}"):
            q -= 1
        return q + 1

    def _template_args(self, tparams):
        """(template arguments naming a kernel template's own parameters, "<T, N, Ts...>"; its
        template parameter list with every parameter named), ("", None) without a template head,
        (None, None) when a parameter cannot be named. An unnamed parameter (template <class, int N>)
        gets a name, inserted into the declaration itself (cusim_tparam_<n>_: the kernel cannot
        refer to an unnamed parameter, so naming it changes nothing), so that the kernel's anchor
        and companion can spell the instantiation."""
        if tparams is None:
            return "", None
        cached = self._tparam_names.get(tparams)
        if cached is not None:
            return cached
        toks = self.toks
        names, parts, inserts = [], [], []
        result = None
        for a, b in self._split_commas(tparams[0], tparams[1], True):
            eq = next((q for q in range(a, b) if toks[q].text == "="), b)
            items = toks[a:eq]
            if not items:
                break
            last = items[-1]
            text = join_tokens(items)
            if last.text in (")", "]"):
                # A declarator with parentheses: int (*F)(int), int (&A)[4], void (S::*)(). The
                # name sits before the ')' of the first group of pointer operators.
                place = self._declarator_name_place(a, eq)
                if place is None:
                    break
                at, name = place
                if name is None:
                    name = "cusim_tparam_%d_" % self._next_id()
                    inserts.append((toks[at].start, name + " "))
                    text = join_tokens(toks[a:at]) + " " + name + " " + join_tokens(toks[at:eq])
            elif len(items) < 2 or last.kind != "id" or last.text in _KEYWORDS:
                name = "cusim_tparam_%d_" % self._next_id()
                inserts.append((last.end, " " + name))
                text += " " + name
            else:
                name = last.text
            names.append(name + ("..." if any(t.text == "..." for t in items) else ""))
            parts.append(text + (" " + join_tokens(toks[eq:b]) if eq < b else ""))
        else:
            self._anchors.extend(inserts)
            result = ("<%s>" % ", ".join(names), ", ".join(parts))
        if result is None:
            result = (None, None)
        self._tparam_names[tparams] = result
        return result

    def _declarator_name_place(self, lo, hi):
        """In the template parameter toks[lo:hi] whose declarator has parentheses (a pointer to
        function, a reference to an array, a pointer to member): (index of the ')' closing the
        pointer operators, the declared name or None when unnamed), or None when it has no such
        group."""
        toks = self.toks
        for p in range(lo, hi):
            if toks[p].text != "(":
                continue
            m = self._match.get(p)
            if m is None or m >= hi or m == p + 1:
                return None
            inner = toks[p + 1:m]
            if inner[0].text not in ("*", "&", "&&") and not (
                    inner[0].kind == "id" and len(inner) > 2 and inner[1].text == "::"):
                return None  # int (int): a function type, no pointer operator
            if not all(t.text in ("*", "&", "&&", "::", "const", "volatile") or t.kind == "id"
                       for t in inner):
                return None
            last = inner[-1]
            if last.kind == "id" and last.text not in _KEYWORDS and len(inner) > 1 and \
                    inner[-2].text != "::":
                return m, last.text
            return m, None
        return None

    def _companion(self, name, tparams, paren, close):
        """After each declaration and definition of a kernel, a declaration of its companion

            template <TPARAMS> auto cusim_kernel_id_NAME(PARAMS)
                -> ::cusim::detail::kernel_ref<static_cast<void (*)(PARAMS)>(&NAME<TARGS>)>;

        with the kernel's template head and parameters as written (defaults included), never
        defined. A launch whose kernel the rewriter cannot resolve (template arguments deduced, an
        overload set) names the companion in an unevaluated call with the launch's argument types:
        deduction and overload resolution pick the companion of the kernel the launch calls, and its
        return type holds that kernel's address (its __launch_bounds__ and attributes). Returns
        False where no companion can be written."""
        toks = self.toks
        n = len(toks)
        if self.macro_params is not None:
            return False  # a kernel in a #define body: its name may be a parameter of the macro
        targs, head_params = self._template_args(tparams)
        if targs is None:
            return False
        k = close + 1
        while k < n and toks[k].text not in ("{", ";", "}"):
            k += 1
        if k >= n or toks[k].text == "}":
            return False
        if toks[k].text == "{":
            k = self._match.get(k)
            if k is None:
                return False
        if self._pp_between(toks[paren].start, toks[close].end) or \
                (tparams is not None and self._pp_between(toks[tparams[0]].start, toks[tparams[1]].start)):
            return False  # a directive inside the declaration cannot be copied onto one line
        head = "template <%s> " % head_params if tparams is not None else ""
        params = self._parameter_declarations(paren, close)
        text = (" %sauto cusim_kernel_id_%s(%s) -> ::cusim::detail::kernel_ref<static_cast<void (*)(%s)>(&%s%s)>;"
                % (head, name, join_tokens(toks[paren + 1:close]), ", ".join(params), name, targs))
        self._anchors.append((toks[k].end, text))
        return True

    def _anchor(self, name, tparams, paren, close, bound, spelled=None):
        """At the top of the body of a kernel definition: an odr-use of
        ::cusim::detail::kernel_anchor<&kernel, BOUND>, whose initializer registers the kernel (its
        name for reports, the first __launch_bounds__ argument as its maximum block size) before
        main, once per instantiation of a template kernel. The kernel's address is spelled as a
        cast to its own function type, the parameter declarations as written (a type-id may name
        parameters), so overloads and template instantiations each get theirs."""
        toks = self.toks
        n = len(toks)
        k = close + 1
        while k < n and toks[k].text not in ("{", ";", "}"):
            k += 1
        if k >= n or toks[k].text != "{" or self._match.get(k) is None:
            return  # a declaration
        if spelled is None:
            targs, _head = self._template_args(tparams)
            if targs is None:
                return  # a template parameter that cannot be named
            spelled = name + targs
        params = self._parameter_declarations(paren, close)
        text = ("(void)&::cusim::detail::kernel_anchor<static_cast<void (*)(%s)>(&%s), (%s)>;"
                % (", ".join(params), spelled, bound if bound is not None else "0"))
        self._anchors.append((toks[k].end, " " + text))

    def _template_info(self, lo, hi):
        """(normalized parameter list, required count, total count, has pack)."""
        toks = self.toks
        if lo >= hi:
            return ("", 0, 0, False)
        norm = []
        required = 0
        total = 0
        pack = False
        for a, b in self._split_commas(lo, hi, True):
            total += 1
            items = []
            has_default = False
            for k in range(a, b):
                tx = toks[k].text
                if tx == "=":
                    has_default = True
                    break
                if tx == "...":
                    pack = True
                items.append("class" if tx == "typename" else tx)
            if not has_default:
                required += 1
            norm.append(" ".join(items))
        return (",".join(norm), required, total, pack)

    def _param_signature(self, lo, hi):
        """Parameter types with parameter names and default arguments removed."""
        toks = self.toks
        params = []
        for a, b in self._split_commas(lo, hi, True):
            items = []
            for k in range(a, b):
                if toks[k].text == "=":
                    break
                items.append(toks[k])
            # Drop the parameter name: the last identifier before any array bounds.
            cut = len(items)
            for k, t in enumerate(items):
                if t.text == "[":
                    cut = k
                    break
            if cut >= 2 and items[cut - 1].kind == "id" and items[cut - 1].text not in _KEYWORDS:
                del items[cut - 1]
            params.append(" ".join(t.text for t in items))
        if params == ["void"] or params == [""]:
            params = []
        return tuple(params)

    # -- main pass -----------------------------------------------------------------------------

    def run(self):
        for offset, text in self._anchors:
            self._edit(offset, offset, text)
        self._device_arch_conditions()
        if self.macro_params is None:
            for start, end in self.pp_spans:
                self._macro(start, end)
        toks = self.toks
        n = len(toks)
        stack = []      # brace kinds: 'ns' (namespace/extern "C"), 'class', 'func'
        func_depth = 0  # number of 'func' braces on the stack
        head = 0        # first token of the current declaration/statement
        i = 0
        while i < n:
            t = toks[i]
            kind = t.kind
            if kind == "punct":
                tx = t.text
                if tx == "(":
                    j = self._void_cast(i)
                    if j is not None:
                        i = j
                        continue
                if tx == "{":
                    bkind = "func" if func_depth else self._classify_brace(head, i)
                    stack.append(bkind)
                    if bkind == "func":
                        func_depth += 1
                    head = i + 1
                elif tx == "}":
                    if stack and stack.pop() == "func":
                        func_depth -= 1
                    head = i + 1
                elif tx == ";":
                    head = i + 1
            elif kind == "launch":
                try:
                    i = self._launch(i)
                except RewriteError as e:
                    self.errors.append((e.line, e.message))
                    i = self._recover(i)
                head = i
                continue
            elif kind == "id":
                tx = t.text
                if tx == "__shared__" and self.macro_params is not None and not func_depth:
                    # In a #define body outside any function body the macro defines, the scope of
                    # the expansion is unknown: a plain __shared__ stays per-worker storage (the
                    # #define of cusim/device.h), an extern __shared__ cannot be placed.
                    if any(toks[q].text == "extern" for q in range(head, i)) or \
                            (i + 1 < n and toks[i + 1].text == "extern"):
                        self.errors.append((t.line, (
                            "cusim: extern __shared__ in the body of macro '%s' is not supported on "
                            "the sim backend unless the macro defines the whole kernel; declare "
                            "the array in the kernel itself (extern __shared__ T name[];), outside "
                            "the macro (see docs/cusim.md)") % self.macro_name))
                    i += 1
                    continue
                if tx == "__shared__":
                    try:
                        i = self._shared(i, head, func_depth > 0)
                    except RewriteError as e:
                        self.errors.append((e.line, e.message))
                        i = self._recover(i)
                    head = i
                    continue
                if tx == "reinterpret_cast":
                    j = self._void_cast(i)
                    if j is not None:
                        i = j
                        continue
                if tx in self.launch_macros and self.macro_params is None:
                    self._macro_use(i)
                if tx == "__noinline__":
                    self._edit(t.start, t.end, "__attribute__((noinline))")
                elif tx == "__attribute__" and i + 1 < n and toks[i + 1].text == "(":
                    # GNU attributes are copied as written: __attribute__((__noinline__))
                    # is already valid C++.
                    m = self._match.get(i + 1)
                    if m is not None:
                        i = m + 1
                        continue
            i += 1
        return self._apply()

    def _recover(self, i):
        """After an error at toks[i], continue after the next ';' (or at the next brace)."""
        toks = self.toks
        k = i + 1
        while k < len(toks) and toks[k].text not in (";", "{", "}"):
            k += 1
        return k + 1 if k < len(toks) and toks[k].text == ";" else k

    def _device_only_bodies(self):
        """(start offset, end offset, first token, last token) of the bodies of functions declared
        __global__ or __device__ without __host__ (and of __device__ lambdas): code that only
        nvcc's device pass compiles."""
        toks = self.toks
        return [(toks[body].start, toks[last].end, body, last)
                for _, last, body in self._device_only_declarations() if body is not None]

    def _device_only_declarations(self):
        """(first token, last token, body's opening brace or None) of each declaration of a
        device-only function (with its body) or variable, and of each __device__/__global__
        prototype: declared __global__, __device__ or __constant__, without __host__."""
        if self._device_decls is not None:
            return self._device_decls
        toks = self.toks
        n = len(toks)
        decls = []
        for i, t in enumerate(toks):
            if t.kind != "id" or t.text not in ("__global__", "__device__", "__constant__"):
                continue
            if decls and decls[-1][1] >= i:
                continue  # inside the previous one (a __device__ lambda in a kernel)
            j = i - 1
            host = False
            while j >= 0 and toks[j].text not in (";", "{", "}"):
                host = host or toks[j].text == "__host__"
                j -= 1
            k = i + 1
            last = body = None
            params = initializer = False
            while k < n:
                kt = toks[k].text
                if kt in ("(", "[", "{"):
                    m = self._match.get(k)
                    if m is None:
                        break
                    if kt == "{" and params and not initializer:
                        last, body = m, k  # a function body
                        break
                    params = params or kt == "("
                    k = m + 1
                    continue
                if kt == "__host__":
                    host = True
                elif kt == "=":
                    initializer = True  # a variable (`__device__ int x = 1;`), braces and all
                elif kt in (";", "}"):
                    last = k if kt == ";" else None
                    break
                k += 1
            if last is not None and not host:
                decls.append((j + 1, last, body))
        self._device_decls = decls
        return decls

    def _device_arch_conditions(self):
        """Inside a device-only function body, __CUDA_ARCH__ in #if, #elif, #ifdef and #ifndef is
        the virtual device's (nvcc compiles such a body only in its device pass, where the macro
        is set); everywhere else it stays undefined, as in nvcc's host pass (docs/cusim.md)."""
        has_arch = "__CUDA_ARCH__" in self.text
        if not has_arch and not _CLOCK_CALL.search(self.text):
            return
        device_bodies = self._device_only_bodies()
        self._device_clock_calls(device_bodies)
        if not has_arch:
            return
        bodies = [(b0, b1) for b0, b1, _, _ in device_bodies]
        done = set()
        for start, end in self.pp_spans:
            if any(b0 < start < b1 for b0, b1 in bodies) and self._device_arch_directive(start, end):
                done.add(start)
        # File scope: an #if chain on __CUDA_ARCH__ whose every branch holds only device-only
        # declarations (NVIDIA's `#if __CUDA_ARCH__ >= 700 __device__ void f() {...} #endif`) is
        # what nvcc's device pass sees. Left alone when a branch the device view drops holds a
        # directive (an #include the host code may need) or anything else.
        decls = self._device_only_declarations()
        starts = [self.toks[a].start for a, _, _ in decls]
        ends = [self.toks[b].end for _, b, _ in decls]
        tok_starts = [t.start for t in self.toks]
        for chain in self._conditional_chains():
            if chain[0][0] in done or not any("__CUDA_ARCH__" in self.text[a:b] for a, b, _ in chain):
                continue
            chosen = None
            for k, (a, b, _) in enumerate(chain):
                v = _device_view(self.text[a:b])
                if v is None:
                    chosen = -1
                    break
                if v and chosen is None:
                    chosen = k
            if chosen == -1:
                continue
            ok = True
            for k, (a, b, group_end) in enumerate(chain):
                if not self._only_device_declarations(b, group_end, starts, ends, tok_starts):
                    ok = False
                    break
                if k != chosen and any(b <= s < group_end for s, _ in self.pp_spans):
                    ok = False
                    break
            if ok:
                for a, b, _ in chain:
                    self._device_arch_directive(a, b)

    def _device_clock_calls(self, bodies):
        """clock() and clock64() in device-only code are the SM's cycle counter, as nvcc's device
        pass has them (clock() is not the C library's processor time): cycles of the device's
        clock rate (1.98 GHz, the cudaDevAttrClockRate cusim reports) from the steady clock's
        nanoseconds (cusim's clock64())."""
        toks = self.toks
        for _, _, first, last in bodies:
            for k in range(first + 1, last - 2):
                name = toks[k].text
                if name not in ("clock", "clock64") or toks[k + 1].text != "(" or toks[k + 2].text != ")":
                    continue
                prev = toks[k - 1].text
                if prev in (".", "->") or (prev == "::" and toks[k - 2].kind == "id"):
                    continue  # a member, or std::clock()
                start = toks[k - 1].start if prev == "::" else toks[k].start
                self._edit(start, toks[k + 2].end, DEVICE_CLOCK if name == "clock" else DEVICE_CLOCK64)

    def _device_arch_directive(self, start, end):
        """Rewrites the #if/#elif/#ifdef/#ifndef at [start, end) to read __CUDA_ARCH__ as the
        virtual device's; False when it is not such a directive."""
        d = self.text[start:end]
        m = _ARCH_DIRECTIVE.match(d)
        if not m:
            return False
        kw = m.group(1)
        if kw in ("ifdef", "ifndef"):
            rest = d[m.end():]
            name = re.match(r"\s*(\w+)", rest)
            if not name or name.group(1) != "__CUDA_ARCH__":
                return False
            new = d[:m.start(1)] + "if " + ("1" if kw == "ifdef" else "0") + " /* cusim: " + kw + \
                " __CUDA_ARCH__, device code */" + rest[name.end():]
        elif kw in ("if", "elif") and "__CUDA_ARCH__" in d:
            cond = _DEFINED_ARCH.sub("1", d[m.end():])
            new = d[:m.end()] + re.sub(r"\b__CUDA_ARCH__\b", DEVICE_ARCH, cond)
        else:
            return False
        self._edit(start, end, new)
        return True

    def _conditional_chains(self):
        """Each #if/#ifdef/#ifndef with its #elif and #else: a list of (directive start,
        directive end, end of the group it controls), the #endif excluded."""
        chains = []
        stack = []
        for start, end in self.pp_spans:
            m = _COND_KW.match(self.text, start, end)
            if not m:
                continue
            kw = m.group(1)
            if kw in ("if", "ifdef", "ifndef"):
                stack.append([[start, end, None]])
            elif stack and kw in ("elif", "else"):
                stack[-1][-1][2] = start
                stack[-1].append([start, end, None])
            elif stack and kw == "endif":
                chain = stack.pop()
                chain[-1][2] = start
                chains.append([tuple(x) for x in chain])
        return chains

    def _only_device_declarations(self, a, b, starts, ends, tok_starts):
        """True when every token in the text [a, b) belongs to a device-only declaration that
        lies wholly in it."""
        for idx in range(bisect.bisect_left(tok_starts, a), len(self.toks)):
            t = self.toks[idx]
            if t.start >= b:
                break
            k = bisect.bisect_right(starts, t.start) - 1
            if k < 0 or not (starts[k] >= a and ends[k] <= b and t.end <= ends[k]):
                return False
        return True


    def _classify_brace(self, head, i):
        """Kind of the '{' at toks[i] seen outside any function: 'ns' for namespace and
        linkage-specification bodies, 'class' for class/struct/union/enum bodies, 'func'
        for everything else (function bodies, and initializers, which is harmless)."""
        toks = self.toks
        j = head
        while j < i:
            tx = toks[j].text
            if tx == "template" and j + 1 < i and toks[j + 1].text == "<":
                close = self._skip_angle(j + 1, i)
                if close is None:
                    break
                j = close + 1
            elif tx in _ATTR_CALLS and j + 1 < i and toks[j + 1].text == "(":
                m = self._match.get(j + 1)
                if m is None or m >= i:
                    break
                j = m + 1
            elif tx == "[" and j + 1 < i and toks[j + 1].text == "[":
                m = self._match.get(j)
                if m is None or m >= i:
                    break
                j = m + 1
            elif tx in ("public", "private", "protected") and j + 1 < i and toks[j + 1].text == ":":
                j += 2
            elif tx == "extern" and j + 1 < i and toks[j + 1].kind == "str":
                if j + 2 == i:
                    return "ns"  # extern "C" { ... }
                j += 2
            elif tx in _HEAD_PREFIX:
                j += 1
            else:
                break
        if j >= i:
            return "func"
        first = toks[j].text
        if first == "namespace":
            return "ns"
        if first in _CLASS_KEYS:
            seen_base_or_args = False
            k = j + 1
            while k < i:
                tx = toks[k].text
                if tx in (":", "<"):
                    seen_base_or_args = True
                elif tx == "(":
                    if not seen_base_or_args:
                        return "func"  # struct S f(...) {
                    m = self._match.get(k)
                    if m is None or m >= i:
                        return "func"
                    k = m
                elif tx == "=":
                    return "func"  # struct S s = { ... }: an initializer
                k += 1
            return "class"
        return "func"

    # -- kernel launch -------------------------------------------------------------------------

    def _launch(self, i):
        """toks[i] is '<<<'. Records the edit; returns the index after the launch."""
        toks = self.toks
        n = len(toks)
        lt = toks[i]
        name_lo = self._launch_name_start(i)
        name_toks = toks[name_lo:i]
        first = toks[name_lo]

        # Launch configuration: up to the first '>>>' outside brackets.
        k = i + 1
        cfg_end = None
        while k < n:
            tx = toks[k].text
            if tx in ("(", "[", "{"):
                m = self._match.get(k)
                if m is None or m < k:
                    break
                k = m + 1
                continue
            if tx == ">" and k + 2 < n and toks[k + 1].text == ">" and toks[k + 2].text == ">" \
                    and toks[k + 1].start == toks[k].end and toks[k + 2].start == toks[k + 1].end:
                cfg_end = k
                break
            if tx in (";", ")", "]", "}", "<<<"):
                break
            k += 1
        if cfg_end is None:
            raise RewriteError(
                lt.line,
                "kernel launch of '%s': '<<<' has no matching '>>>' (expected "
                "name<<<grid, block[, shared_bytes[, stream]]>>>(args...))" % join_tokens(name_toks))
        cfg_parts = self._split_commas(i + 1, cfg_end, False)
        if cfg_end == i + 1:
            cfg_count = 0
        else:
            cfg_count = len(cfg_parts)
        if cfg_count < 2 or cfg_count > 4:
            raise RewriteError(
                lt.line,
                "kernel launch of '%s' has %d launch configuration argument%s; a launch takes "
                "2 to 4: <<<grid, block[, shared_bytes[, stream]]>>>"
                % (join_tokens(name_toks), cfg_count, "" if cfg_count == 1 else "s"))
        for a, b in cfg_parts:
            if a == b:
                raise RewriteError(
                    lt.line, "kernel launch of '%s' has an empty launch configuration argument"
                    % join_tokens(name_toks))

        # Kernel arguments.
        popen = cfg_end + 3
        if popen >= n or toks[popen].text != "(":
            where = toks[popen] if popen < n else toks[cfg_end]
            raise RewriteError(
                where.line,
                "kernel launch of '%s': expected '(' with the kernel arguments after '>>>' "
                "(write name<<<grid, block>>>() for a kernel without arguments)"
                % join_tokens(name_toks))
        pclose = self._match.get(popen)
        if pclose is None:
            raise RewriteError(
                toks[popen].line,
                "kernel launch of '%s': the argument list '(' is not closed" % join_tokens(name_toks))

        cfg_toks = toks[i + 1:cfg_end]
        text = self.text
        # The configuration is emitted on the launch's first line unless it holds a
        # preprocessor directive or a multi-line token, which must keep their lines.
        if self._pp_between(lt.end, toks[cfg_end].start) or any("\n" in t.text for t in cfg_toks):
            cfg_text = text[lt.end:toks[cfg_end].start]
        else:
            cfg_text = join_tokens(cfg_toks).strip()
        name_text = join_tokens(name_toks)
        kid = self._kernel_id(name_lo, i)
        if (kid.startswith("CUSIM_KERNEL_ID(") or kid == "nullptr") and self.macro_params is None:
            kid = self._deduced_kernel_id(name_lo, i, kid)
        head = ("::cusim::launch(::cusim::launch_config(%s), %s, %d, %s, %s, "
                "[&](const auto&... cusim_arg_) { %s(cusim_arg_...); }"
                % (cfg_text, _c_string(self.path), first.line, _c_string(name_text), kid, name_text))
        # Newlines of the replaced span before the argument list, re-emitted so that the
        # arguments (copied verbatim) stay on their own lines.
        lost = self._newlines(first.start, toks[popen].end) - head.count("\n")
        args_text = text[toks[popen].end:toks[pclose].start]
        has_args = pclose > popen + 1
        if self.macro_params is not None:
            # In a #define: the launch site is where the macro is used, the name as the use spells
            # it, and the arguments (perhaps __VA_ARGS__, perhaps empty) go to a call of their own.
            macro_name = any(t.text in ("#", "##") or t.text in self.macro_params for t in name_toks)
            if macro_name:
                kid = "CUSIM_KERNEL_ID(%s)" % name_text
                if self.kid_params is not None and len(name_toks) == 1 and name_text != "__VA_ARGS__":
                    kid = "cusim_kid_%d_" % len(self.kid_params)
                    self.kid_params.append(name_text)
            head = ("::cusim::launcher(::cusim::launch_config(%s), __FILE__, __LINE__, %s, %s, "
                    "[&](const auto&... cusim_arg_) { %s(cusim_arg_...); })("
                    % (cfg_text, "CUSIM_KERNEL_NAME(%s)" % name_text if macro_name else _c_string(name_text),
                       kid, name_text))
            repl = head + self._nl * lost + args_text + ")"
        else:
            repl = head + "\n" * lost + (", " if has_args else "") + args_text + ")"
        self._edit(first.start, toks[pclose].end, repl)
        return pclose + 1

    def _deduced_kernel_id(self, lo, hi, kid):
        """For a launch the rewriter could not resolve, the kernel id as the compiler resolves the
        call: ::cusim::detail::deduced_kernel(KID, resolver), where the resolver names the
        kernel's companion (see _companion) with the launch's argument types, unevaluated: for a
        kernel whose every declaration in this file has a companion, and for an unqualified name of
        a kernel of the program's headers (a companion not found there leaves KID). Else KID.""" 
        toks = self.toks
        last = hi - 1
        if toks[last].text == ">":
            lt = self._back_angle(last, lo)
            if lt is None:
                return kid
            last = lt - 1
        if last < lo or toks[last].kind != "id":
            return kid
        name = toks[last].text
        if name in self._no_companion:
            return kid
        if name not in self._companions and (name not in self.header_kernels or
                                             any(t.text == "::" for t in toks[lo:last])):
            return kid
        for t in toks[lo:last]:
            if t.kind != "id" and t.text != "::":
                return kid  # only a (qualified) name: member access and the like stay as they are
        call = join_tokens(toks[lo:last]) + "cusim_kernel_id_" + name + join_tokens(toks[last + 1:hi])
        return ("::cusim::detail::deduced_kernel(%s, []<class... cusim_t_>() -> const void* { "
                "if constexpr (requires(const cusim_t_&... cusim_a_) { %s(cusim_a_...); }) "
                "return decltype(%s(::std::declval<const cusim_t_&>()...))::id(); else return nullptr; })"
                % (kid, call, call))

    def _launch_name_start(self, i):
        """Index of the first token of the kernel expression before '<<<' at toks[i]:
        an id-expression (qualified, with template arguments), optionally reached through
        member access and subscripts (s.fn, p->fns[2]), or a parenthesized expression."""
        toks = self.toks

        def fail():
            raise RewriteError(
                toks[i].line,
                "'<<<' is not preceded by a kernel name (expected name<<<grid, block>>>(args...); "
                "a kernel given by an expression must be stored in a variable or parenthesized)")

        def is_name(k):
            return k >= 0 and toks[k].kind == "id" and (
                toks[k].text not in _KEYWORDS or toks[k].text == "this")

        j = i - 1
        while True:
            if j < 0:
                fail()
            tx = toks[j].text
            if tx == "]":  # subscript: the array expression precedes it
                m = self._match.get(j)
                if m is None or m > j:
                    fail()
                j = m - 1
                continue
            if tx == ")":
                m = self._match.get(j)
                if m is None or m > j:
                    fail()
                if is_name(m - 1) or (m > 0 and toks[m - 1].text in (">", ")", "]")):
                    raise RewriteError(
                        toks[i].line,
                        "the kernel before '<<<' is a call expression; store the kernel pointer "
                        "in a variable first (e.g. auto kfn = %s; kfn<<<...>>>(...))"
                        % join_tokens(toks[m - 1:i]))
                start = m
            else:
                # name [<targs>] { :: [template] name [<targs>] } with an optional leading '::'
                while True:
                    if toks[j].text == ">":
                        lo = self._back_angle(j, 0)
                        if lo is None or lo == 0:
                            fail()
                        j = lo - 1
                    if not is_name(j):
                        fail()
                    if j >= 2 and toks[j - 1].text == "template" and toks[j - 2].text == "::":
                        j -= 1
                    if j >= 1 and toks[j - 1].text == "::":
                        j -= 1
                        if is_name(j - 1) or (j >= 1 and toks[j - 1].text == ">"):
                            j -= 1
                            continue
                    break
                start = j
                while (self.macro_params is not None and start >= 2 and toks[start - 1].text == "##"
                       and toks[start - 2].kind in ("id", "num")):
                    start -= 2
            if start >= 2 and toks[start - 1].text in (".", "->"):
                j = start - 2
                continue
            return start

    def _kernel_id(self, lo, hi):
        """Kernel id expression for the kernel expression toks[lo:hi]."""
        toks = self.toks
        if toks[lo].text == "(" or any(t.text in ("#", "##") for t in toks[lo:hi]):
            return "nullptr"
        angle = 0
        for k in range(lo, hi):
            tx = toks[k].text
            if tx == "<":
                angle += 1
            elif tx == ">":
                angle -= 1
            elif angle == 0 and tx in (".", "->", "["):
                return "nullptr"  # a function pointer reached through an object
        # Base name and explicit template arguments of the last component.
        last = hi - 1
        n_targs = None
        if toks[last].text == ">":
            lt = self._back_angle(last, lo)
            if lt is None:
                return "nullptr"
            n_targs = 0 if lt + 1 == last else len(self._split_commas(lt + 1, last, True))
            last = lt - 1
        # Not resolved from this file's declarations (a kernel from a header, a function pointer,
        # an overload): the compiler resolves the id-expression, which has no side effects.
        fallback = "CUSIM_KERNEL_ID(%s)" % join_tokens(toks[lo:hi])
        # An explicit specialization is no kernel of its own for name lookup: k<float> names it
        # through the primary template.
        sigs = [sig for sig in self.kernels.get(toks[last].text, ()) if not sig[1]]
        if len(sigs) != 1:
            return fallback
        tinfo, _spec, _params = sigs[0]
        if tinfo is None:
            if n_targs is not None:
                return fallback
        else:
            _norm, required, total, pack = tinfo
            if n_targs is None or pack or not (required <= n_targs <= total):
                return fallback
        return "reinterpret_cast<const void*>(&%s)" % join_tokens(toks[lo:hi])

    # -- macro bodies ------------------------------------------------------------------------

    _DEFINE = re.compile(r"#\s*define\s+([A-Za-z_]\w*)(\(([^)]*)\))?")

    def _macro(self, start, end):
        """A #define whose body launches a kernel or casts a macro parameter to void*: the body is
        rewritten as code is (launch, (void*)kernel), with the kernel named by the macro's use."""
        text = self.text[start:end]
        if "<<<" not in text and "void" not in text and "__shared__" not in text:
            return
        m = self._DEFINE.match(text)
        if not m:
            return
        params = set()
        if m.group(2):
            for p in m.group(3).split(","):
                p = p.strip().replace("\\\n", "").strip()
                params.add("__VA_ARGS__" if p == "..." else p)
        def rewritten_body(kid_params):
            sub = Rewriter(text[m.end():], self.path, macro_params=params)
            sub.macro_name = m.group(1)
            sub.kernels = self.kernels
            sub.header_kernels = self.header_kernels
            sub.kid_params = kid_params
            return sub, sub.run()

        sub, body = rewritten_body(None)
        for line, message in sub.errors:
            self.errors.append((self.text.count("\n", 0, start) + line, message))
        if not sub.edits:
            return
        # A launch whose kernel is a parameter of the macro (LAUNCH(k, g, b, ...) k<<<g, b>>>(...)):
        # the rewriter sees the kernel only at each use of the macro. A variant of the macro takes
        # each such launch's kernel id as a leading argument, which a use the rewriter can resolve
        # (a template kernel whose arguments the launch deduces, an overload set) calls instead
        # (_macro_use). It is defined on lines of its own, after which #line restores the numbering.
        kid_params = []
        _sub, variant = rewritten_body(kid_params)
        if not kid_params or m.group(2) is None:
            self._edit(start + m.end(), end, body)
            return
        name = m.group(1)
        original = m.group(3).replace("\\\n", " ").replace("\\\r\n", " ").strip()
        kids = ", ".join("cusim_kid_%d_" % n for n in range(len(kid_params)))
        next_line = self.text.count("\n", 0, end) + 2
        self._edit(start + m.end(), end, "%s\n#define %s__cusim_kid(%s%s)%s\n#line %d %s" % (
            body, name, kids, ", " + original if original else "", variant, next_line,
            _c_string(self.path)))
        self.launch_macros[name] = (start, [p.strip() for p in original.split(",")], kid_params)

    def _macro_use(self, i):
        """toks[i] names a macro with a variant (_macro): where a launch of its body gets a kernel the
        rewriter resolves here, through the kernel's companion (a template kernel whose arguments
        the launch deduces, an overload set), the use calls the variant with the
        kernel ids in front: LAUNCH(k, 1, 64, p) -> LAUNCH__cusim_kid((KID), k, 1, 64, p)."""
        toks = self.toks
        n = len(toks)
        offset, params, kid_params = self.launch_macros[toks[i].text]
        if offset >= toks[i].start or i + 1 >= n or toks[i + 1].text != "(" or \
                (i > 0 and toks[i - 1].text in (".", "->", "::")):
            return
        close = self._match.get(i + 1)
        if close is None or self._pp_between(toks[i].start, toks[close].end):
            return
        # The macro's arguments as the preprocessor splits them: at commas outside parentheses.
        args = []
        start = k = i + 2
        while k < close:
            tx = toks[k].text
            if tx == "(":
                k = self._match.get(k, k)
            elif tx == ",":
                args.append((start, k))
                start = k + 1
            k += 1
        args.append((start, close))
        kids = []
        resolved = False
        for param in kid_params:
            if param not in params or params.index(param) >= len(args):
                return
            a, b = args[params.index(param)]
            if a >= b:
                return
            kid = self._kernel_id(a, b)
            if kid.startswith("CUSIM_KERNEL_ID(") or kid == "nullptr":
                kid = self._deduced_kernel_id(a, b, kid)
            if kid.startswith("::cusim::detail::deduced_kernel("):
                resolved = True
            elif kid == "nullptr" or toks[a].text == "(":
                kid = "CUSIM_KERNEL_ID(%s)" % join_tokens(toks[a:b])  # as the macro's own body
            kids.append("(%s)" % kid)
        if not resolved:
            return
        self._edit(toks[i].end, toks[i].end, "__cusim_kid")
        self._edit(toks[i + 1].end, toks[i + 1].end, ", ".join(kids) + ("" if close == i + 2 else ", "))

    # -- (void*)kernel ------------------------------------------------------------------------

    def _void_pointer_type(self, lo, hi):
        """True if toks[lo:hi] spells `void *` with optional const/volatile."""
        if not 2 <= hi - lo <= 4:
            return False
        texts = [t.text for t in self.toks[lo:hi]]
        return (len(texts) >= 2 and texts[-1] == "*" and texts.count("void") == 1
                and all(x in ("void", "const", "volatile") for x in texts[:-1]))

    def _kernel_operand(self, k):
        """[&] [::] name {:: name} [<targs>] starting at toks[k] whose last name is a kernel:
        (end index, last name), or None."""
        toks = self.toks
        n = len(toks)
        if k < n and toks[k].text == "&":
            k += 1
        if k < n and toks[k].text == "::":
            k += 1
        while True:
            if k >= n or toks[k].kind != "id" or toks[k].text in _KEYWORDS:
                return None
            name = toks[k].text
            k += 1
            if k < n and toks[k].text == "<":
                close = self._skip_angle(k, n)
                if close is None:
                    return None
                k = close + 1
            if k < n and toks[k].text == "::":
                k += 1
                continue
            break
        if name not in self.kernels and name not in self.header_kernels and (
                self.macro_params is None or name not in self.macro_params):
            return None
        return k, name

    def _void_cast(self, i):
        """toks[i] is '(' or 'reinterpret_cast': a cast of a kernel to a void pointer becomes
        ::cusim::kernel_pointer(kernel, "kernel"). Returns the index after it, or None."""
        toks = self.toks
        n = len(toks)
        if toks[i].text == "(":
            close = self._match.get(i)
            if close is None or close < i or not self._void_pointer_type(i + 1, close):
                return None
            lo = close + 1
            operand = self._kernel_operand(lo)
            if operand is None:
                return None
            end, _name = operand
            if end < n and toks[end].text in ("(", "[", ".", "->"):
                return None  # the cast applies to a call or a member, not to the kernel
        else:
            if i + 1 >= n or toks[i + 1].text != "<":
                return None
            gt = self._skip_angle(i + 1, n)
            if gt is None or not self._void_pointer_type(i + 2, gt) or gt + 1 >= n or toks[gt + 1].text != "(":
                return None
            pclose = self._match.get(gt + 1)
            lo = gt + 2
            operand = self._kernel_operand(lo)
            if operand is None or pclose is None or operand[0] != pclose:
                return None
            end = pclose + 1
        if self._pp_between(toks[i].start, toks[end - 1].end):
            return None
        op_end = end if toks[i].text == "(" else end - 1
        operand_text = join_tokens(toks[lo:op_end])
        name_text = operand_text.lstrip("&")
        if self.macro_params is not None and any(t.text in self.macro_params for t in toks[lo:op_end]):
            name_text = "CUSIM_KERNEL_NAME(%s)" % name_text
        else:
            name_text = _c_string(name_text)
        repl = "::cusim::kernel_pointer(%s, %s)" % (operand_text, name_text)
        start, stop = toks[i].start, toks[end - 1].end
        self._edit(start, stop, repl + self._nl * self._newlines(start, stop))
        return end

    # -- __shared__ ------------------------------------------------------------------------

    def _shared(self, i, head, in_function):
        """toks[i] is '__shared__'. Records the edit; returns the index after the
        declaration."""
        toks = self.toks
        n = len(toks)
        t = toks[i]

        # Start of the declaration: walk back over decl-specifiers and attributes.
        s = i
        while s - 1 >= head:
            p = toks[s - 1]
            tx = p.text
            if tx == ")":
                m = self._match.get(s - 1)
                if m is not None and m >= 1 and m - 1 >= head and toks[m - 1].text in _ATTR_CALLS:
                    s = m - 1
                    continue
                break
            if tx == "]" and s - 2 >= head and toks[s - 2].text == "]":
                m = self._match.get(s - 1)
                if m is not None and m >= 1 and toks[m - 1].text == "[":
                    s = m - 1
                    continue
                break
            if tx == ">":
                lo = self._back_angle(s - 1, head)
                if lo is None:
                    break
                s = lo
                continue
            if tx == "::" or (p.kind == "id" and tx not in _STMT_KEYWORDS):
                s -= 1
                continue
            break

        # End of the declaration: ';' outside brackets.
        k = i + 1
        end = None
        while k < n:
            tx = toks[k].text
            if tx in ("(", "[", "{"):
                if tx == "{" and not (
                        toks[k - 1].text in _CLASS_KEYS
                        or (toks[k - 1].kind == "id" and toks[k - 2].text in _CLASS_KEYS)):
                    break  # only a class body may appear in the declaration
                m = self._match.get(k)
                if m is None or m < k:
                    break
                k = m + 1
                continue
            if tx == ";":
                end = k
                break
            if tx in ("}", ")", "]", "<<<"):
                break
            k += 1
        if end is None:
            raise RewriteError(
                t.line, "could not find the end ';' of this __shared__ declaration "
                "(expected e.g. __shared__ float tile[32][33];)")
        if self._pp_between(toks[s].start, toks[end].start):
            raise RewriteError(
                t.line, "a preprocessor directive inside a __shared__ declaration is not "
                "supported; put the whole declaration inside the #if branches")

        # Collect specifiers: drop __shared__/extern/static/attributes, remember alignment.
        is_extern = False
        is_static = False
        align = None
        body = None  # (open, close) of a class body: __shared__ struct { ... } x;
        rest = []
        k = s
        while k < end:
            tk = toks[k]
            tx = tk.text
            if tx == "{":
                body = (k, self._match[k])
                rest.append(k)
                k = body[1] + 1
                continue
            if tx in _ATTR_CALLS and k + 1 < end and toks[k + 1].text == "(":
                m = self._match[k + 1]
                if tx in _ALIGN_CALLS:
                    align = join_tokens(toks[k + 2:m])
                elif tx == "__attribute__":
                    a = self._attribute_alignment(k + 1, m)
                    if a is not None:
                        align = a
                k = m + 1
                continue
            if tx == "[" and k + 1 < end and toks[k + 1].text == "[":
                k = self._match[k] + 1
                continue
            if tx == "__shared__":
                pass
            elif tx == "extern":
                is_extern = True
            elif tx == "static":
                is_static = True
            else:
                rest.append(k)
            k += 1

        if not in_function and not is_extern:
            # File-scope __shared__: per-worker storage (see the documented limitation).
            self._edit(t.start, t.end, "thread_local" if is_static else "static thread_local")
            return end + 1

        if not rest:
            raise RewriteError(t.line, "this __shared__ declaration has no type and name")
        # Removed specifiers leave gaps in offsets, so join_tokens spaces them correctly.
        kept = [toks[k] for k in rest]
        out = []
        if body is not None:
            # The class is defined as its own statement, then named in shared_var<>.
            bi = rest.index(body[0])
            ck = bi - 1
            if ck >= 1 and kept[ck].kind == "id" and kept[ck - 1].text in _CLASS_KEYS:
                tag = kept[ck].text
                ck -= 1
                out.append(self.text[kept[ck].start:toks[body[1]].end] + ";")
            else:
                tag = "cusim_shared_type_%d_" % self._next_id()
                # The text up to '{' is kept (it may hold newlines and attributes).
                out.append("%s%s %s;" % (self.text[kept[ck].start:toks[body[0]].start], tag,
                                         self.text[toks[body[0]].start:toks[body[1]].end]))
            kept[ck:bi + 1] = [Tok("id", tag, -1, -1, t.line)]
        decls = self._declarators(kept, t.line)

        for spec_toks, before, name, after in decls:
            if is_extern:
                out.append(self._extern_shared(spec_toks, before, name, after, in_function, t.line))
            else:
                type_id = join_tokens(spec_toks + before + after)
                key = "cusim_shared_key_%d_" % self._next_id()
                targ = type_id
                if targ.endswith(">") or targ.startswith(":"):
                    targ = " " + targ + " "
                out.append("static char %s; auto& %s = ::cusim::shared_var<%s>(&%s, %s);"
                           % (key, name.text, targ, key,
                              align if align is not None else "alignof(%s)" % type_id))
        start = toks[s].start
        stop = toks[end].end
        repl = " ".join(out)
        self._edit(start, stop, repl + self._nl * (self._newlines(start, stop) - repl.count("\n")))
        return end + 1

    def _attribute_alignment(self, lo, hi):
        """For __attribute__((...)) spanning toks[lo..hi]: the N of aligned(N), if any."""
        toks = self.toks
        for k in range(lo, hi):
            if toks[k].text in ("aligned", "__aligned__") and toks[k + 1].text == "(":
                m = self._match.get(k + 1)
                if m is not None:
                    return join_tokens(toks[k + 2:m])
        return None

    def _declarators(self, kept, line):
        """Split 'TYPE d1, d2, ...' (tokens) into (specifier tokens, tokens before the
        name, name token, tokens after the name) per declarator."""
        # Top-level comma split over the kept token list (brackets and <> nest).
        parts = []
        cur = []
        depth = 0  # (), [], {}
        angle = 0  # template argument lists outside brackets
        for t in kept:
            tx = t.text
            if tx in ("(", "[", "{"):
                depth += 1
            elif tx in (")", "]", "}"):
                depth -= 1
            elif depth == 0 and tx == "<":
                angle += 1
            elif depth == 0 and tx == ">":
                angle -= 1
            elif tx == "," and depth == 0 and angle == 0:
                parts.append(cur)
                cur = []
                continue
            elif tx == "=" and depth == 0 and angle == 0:
                raise RewriteError(
                    line, "a __shared__ variable cannot have an initializer (CUDA does not "
                    "initialize shared memory); assign it in the kernel, then __syncthreads()")
            cur.append(t)
        parts.append(cur)

        result = []
        specs = None
        for idx, part in enumerate(parts):
            name_at = None
            depth_sq = 0
            depth_angle = 0
            for k, t in enumerate(part):
                tx = t.text
                if tx == "[":
                    depth_sq += 1
                elif tx == "]":
                    depth_sq -= 1
                elif tx == "<":
                    depth_angle += 1
                elif tx == ">":
                    depth_angle -= 1
                elif (t.kind == "id" and depth_sq == 0 and depth_angle == 0
                      and tx not in _KEYWORDS):
                    name_at = k
            if name_at is None or (idx == 0 and name_at == 0):
                raise RewriteError(
                    line, "could not find the type and variable name in this __shared__ "
                    "declaration (expected e.g. __shared__ float tile[32][33];)")
            if idx == 0:
                # The declarator begins at the first ptr-operator or '(' outside <>.
                dstart = name_at
                depth_angle = 0
                for k in range(name_at):
                    tx = part[k].text
                    if tx == "<":
                        depth_angle += 1
                    elif tx == ">":
                        depth_angle -= 1
                    elif depth_angle == 0 and (tx in ("*", "&", "&&") or (
                            tx == "(" and (k == 0 or part[k - 1].text not in (
                                "decltype", "__typeof__", "typeof", "sizeof", "alignof")))):
                        dstart = k
                        break
                specs = part[:dstart]
                result.append((specs, part[dstart:name_at], part[name_at], part[name_at + 1:]))
            else:
                result.append((specs, part[:name_at], part[name_at], part[name_at + 1:]))
        return result

    def _extern_shared(self, spec_toks, before, name, after, in_function, line):
        """Replacement text for one declarator of an 'extern __shared__' declaration."""
        if any(t.text == "(" for t in before):
            raise RewriteError(
                line, "unsupported extern __shared__ declarator for '%s'; declare it as "
                "extern __shared__ TYPE %s[];" % (name.text, name.text))
        if len(after) < 2 or after[0].text != "[" or after[1].text != "]":
            raise RewriteError(
                line, "extern __shared__ variable '%s' must be an unsized array, e.g. "
                "extern __shared__ float %s[];" % (name.text, name.text))
        elem = join_tokens(spec_toks + before)
        dims = join_tokens(after[2:])
        if dims:
            decl = "%s (*%s)%s" % (elem, name.text, dims)
            ptr_type = "%s (*)%s" % (elem, dims)
        else:
            decl = "%s* %s" % (elem, name.text)
            ptr_type = "%s*" % elem
        if in_function:
            return "%s = reinterpret_cast<%s>(::cusim::dynamic_shared());" % (decl, ptr_type)
        reg = "cusim_dyn_reg_%d_" % self._next_id()
        cv = any(t.text in ("const", "volatile") for t in spec_toks + before)
        # A C-style cast where the element type is cv-qualified: reinterpret_cast
        # cannot drop the qualifier of the pointee of the pointer.
        cast = "(void**)(&%s)" if cv else "reinterpret_cast<void**>(&%s)"
        return ("static thread_local %s = nullptr; static const bool %s = "
                "::cusim::register_dynamic_shared_pointer([]() -> void** { return %s; });"
                % (decl, reg, cast % name.text))

    # -- output ------------------------------------------------------------------------------

    def _apply(self):
        text = self.text
        self.edits.sort()
        out = ["#line 1 %s\n" % _c_string(self.path)] if self.macro_params is None else []
        pos = 0
        for start, end, repl in self.edits:
            if start < pos:
                raise AssertionError("overlapping rewrites at offset %d" % start)
            out.append(text[pos:start])
            out.append(repl)
            pos = end
        out.append(text[pos:])
        return "".join(out)


# __CUDA_ARCH__ in device-only code: the virtual device's compute capability (9.0, as
# cudaGetDeviceProperties reports it; common/cusim/src/runtime.cpp).
DEVICE_ARCH = "900"
# clock() and clock64() in device-only code: SM cycles at the clock rate cusim reports (1980000 kHz),
# from the nanoseconds of cusim's clock64().
DEVICE_CLOCK = "((clock_t)(::clock64() * 99 / 50))"
DEVICE_CLOCK64 = "((long long)(::clock64() * 99 / 50))"
_CLOCK_CALL = re.compile(r"\bclock(64)?\s*\(\s*\)")
_ARCH_DIRECTIVE = re.compile(r"#\s*(if|elif|ifdef|ifndef)\b")
_COND_KW = re.compile(r"#\s*(if|ifdef|ifndef|elif|else|endif)\b")


def _device_view(directive):
    """The value of an #if/#elif/#ifdef/#ifndef/#else in nvcc's device pass (__CUDA_ARCH__ set,
    the virtual device's), or None when it depends on anything else."""
    m = _COND_KW.match(directive)
    kw = m.group(1)
    rest = directive[m.end():].split("//")[0]
    rest = re.sub(r"/\*.*?\*/", " ", rest, flags=re.S).replace("\\\n", " ").strip()
    if kw == "else":
        return True
    if kw in ("ifdef", "ifndef"):
        return (kw == "ifdef") if rest == "__CUDA_ARCH__" else None
    expr = _DEFINED_ARCH.sub(" 1 ", rest)
    expr = re.sub(r"\b__CUDA_ARCH__\b", DEVICE_ARCH, expr)
    expr = expr.replace("&&", " and ").replace("||", " or ")
    expr = re.sub(r"!(?!=)", " not ", expr)
    if re.search(r"[A-Za-z_]\w*", re.sub(r"\b(and|or|not)\b", "", expr)) or re.search(r"[^\d\s()<>=!andortx+\-*/%]", expr):
        return None
    try:
        return bool(eval(expr, {"__builtins__": {}}, {}))
    except Exception:
        return None


_DEFINED_ARCH = re.compile(r"\bdefined\s*(?:\(\s*__CUDA_ARCH__\s*\)|__CUDA_ARCH__\b)")


def rewrite(text, path):
    """Rewrite CUDA source `text` read from `path` (used for #line and launch sites).
    Returns (output, errors) with errors a list of (line, message)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    r = Rewriter(text, path)
    out = r.run()
    return out, sorted(r.errors)


# ----------------------------------------------------------------------------------------
# Included files: refused CUDA headers, and the program's own headers
# ----------------------------------------------------------------------------------------

_INCLUDE = re.compile(r'#\s*include\s*(?:"([^"\n]+)"|<([^>\n]+)>)')
_COND = re.compile(r"#\s*(if|ifdef|ifndef|endif|define)\b\s*(\w*)")

# What nvcc includes in front of every .cu file (cusim/nvcc_prelude.h: <cuda_runtime.h> and the
# compiler's macros). Placed before #line 1, so every line of the file keeps its number.
PRELUDE = "#include <cusim/nvcc_prelude.h>\n"


def _refused_headers():
    """CUDA header names cusim refuses (common/cusim/refused_headers.txt less what
    common/cusim/include implements); empty when the list is not beside this tool."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    try:
        import cusim_refused_headers
        return cusim_refused_headers.refused()
    except (ImportError, OSError):
        return set()
    finally:
        sys.path.pop(0)


def _include_directives(text, pp_spans):
    """(start, end, name, quoted, unconditional) for each #include with a literal name.
    `unconditional`: outside every #if block, a whole-file include guard not counting."""
    result = []
    depth = 0
    guard = None  # depth-1 block of a leading #ifndef X / #define X include guard
    first = True
    for k, (start, end) in enumerate(pp_spans):
        d = text[start:end]
        c = _COND.match(d)
        if c:
            kw = c.group(1)
            if kw in ("if", "ifdef", "ifndef"):
                depth += 1
                if first and kw == "ifndef" and k + 1 < len(pp_spans):
                    n = _COND.match(text[pp_spans[k + 1][0]:pp_spans[k + 1][1]])
                    if n and n.group(1) == "define" and n.group(2) == c.group(2):
                        guard = 1
            elif kw == "endif":
                depth = max(0, depth - 1)
        first = False
        m = _INCLUDE.match(d)
        if m:
            quoted = m.group(1) is not None
            result.append((start, end, m.group(1) if quoted else m.group(2), quoted,
                           depth - (1 if guard and depth >= 1 else 0) == 0))
    return result


class Program:
    """Rewrites a .cu file and the program's own headers it includes (quoted includes found next
    to the including file), recursively: a header with __shared__ or a launch is rewritten into
    `header_dir` and included from there by absolute path; other headers stay where they are.
    Unconditional #include of a CUDA header cusim refuses is an error naming it."""

    def __init__(self, header_dir):
        self.header_dir = header_dir
        self.refused = _refused_headers()
        self.done = {}  # absolute path -> path of its rewritten copy, or None
        self.errors = []  # (path, line, message)
        self.read = []  # every file read (for the depfile)
        self.outputs = {}  # copy path -> text
        self.kernel_names = set()  # every __global__ function name seen in the files read
        self.launch_macros = {}  # Rewriter.launch_macros of the files read

    def _line(self, text, offset):
        return text.count("\n", 0, offset) + 1

    def rewrite_file(self, path, text, is_copy):
        """Rewritten text of `path`. In a copy (which lives elsewhere) every local quoted include
        becomes absolute; in the main file only those of rewritten headers change. Returns
        (text, changed)."""
        if text.startswith("\ufeff"):
            text = text[1:]
        r = Rewriter(text, path, id_base=100000 * len(self.done))
        self.kernel_names.update(r.kernels)
        base = os.path.dirname(path)
        changed = False
        for start, end, name, quoted, unconditional in _include_directives(text, r.pp_spans):
            local = os.path.normpath(os.path.join(base, name)) if quoted else None
            if local is not None and os.path.isfile(local):
                target = self.header(local)
                if target is not None:
                    changed = True
                if target is None and not is_copy:
                    continue
                target = target or local
                r._edit(start, end, '#include "%s"' % target.replace("\\", "/")
                        + "\n" * text.count("\n", start, end))
            elif name in self.refused and unconditional:
                self.errors.append((path, self._line(text, start),
                                    "cusim: <%s> is not supported on the sim backend (see docs/cusim.md)"
                                    % name))
        n_include_edits = len(r.edits)
        r.header_kernels = set(self.kernel_names)  # kernels of the headers read so far
        r.launch_macros = {name: (-1,) + macro[1:] for name, macro in self.launch_macros.items()}
        out = r.run()
        self.launch_macros.update((name, (-1,) + macro[1:]) for name, macro in r.launch_macros.items())
        for line, msg in r.errors:
            self.errors.append((path, line, msg))
        return out, changed or len(r.edits) > n_include_edits

    def header(self, path):
        """Path of the rewritten copy of header `path`, or None when it needs no rewriting."""
        path = os.path.abspath(path)
        if path in self.done:
            return self.done[path]
        self.done[path] = None  # an include cycle sees the original
        try:
            with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
                text = f.read()
        except OSError:
            return None
        self.read.append(path)
        out, changed = self.rewrite_file(path, text, is_copy=True)
        if not changed:
            return None
        stem, ext = os.path.splitext(os.path.basename(path))
        digest = "%08x" % (zlib.crc32(path.encode("utf-8", "surrogateescape")) & 0xffffffff)
        copy = os.path.join(self.header_dir, "%s_%s%s" % (stem, digest, ext))
        self.outputs[copy] = out
        self.done[path] = copy
        return copy


def _write(path, text, keep_unchanged=False):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    if keep_unchanged:
        try:
            with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
                if f.read() == text:
                    return  # unchanged: keep the timestamp, nothing recompiles
        except OSError:
            pass
    tmp = path + ".tmp%d" % os.getpid()
    with open(tmp, "w", encoding="utf-8", errors="surrogateescape", newline="") as f:
        f.write(text)
    os.replace(tmp, path)


def main(argv):
    args = argv[1:]
    depfile = None
    if len(args) == 4 and args[2] == "--depfile":
        depfile = args[3]
        args = args[:2]
    if len(args) != 2 or args[0] in ("-h", "--help"):
        sys.stderr.write("usage: cusim_rewrite.py INPUT.cu OUTPUT.cpp [--depfile FILE]   (OUTPUT '-' = stdout)\n")
        return 2
    src, dst = args
    path = os.path.abspath(src)
    try:
        with open(src, encoding="utf-8", errors="surrogateescape", newline="") as f:
            text = f.read()
    except OSError as e:
        sys.stderr.write("%s: error: cannot read the CUDA source: %s\n" % (path, e.strerror))
        return 1
    header_dir = (os.path.abspath(dst) + ".headers") if dst != "-" else os.path.join(
        os.path.dirname(path), ".cusim_headers")
    prog = Program(header_dir)
    out, _changed = prog.rewrite_file(path, text, is_copy=False)
    if path.endswith(".cu"):
        out = PRELUDE + out
    if prog.errors:
        for epath, line, msg in sorted(prog.errors):
            sys.stderr.write("%s:%d: error: %s\n" % (epath, line, msg))
        if dst != "-" and os.path.exists(dst):
            os.remove(dst)  # never leave a stale translation behind a failed rewrite
        return 1
    for copy, copy_text in prog.outputs.items():
        _write(copy, copy_text, keep_unchanged=True)
    if depfile:
        deps = [path] + prog.read
        _write(depfile, "%s: %s\n" % (_dep_escape(os.path.abspath(dst)), " ".join(_dep_escape(d) for d in deps)))
    if dst == "-":
        sys.stdout.write(out)
        return 0
    _write(dst, out, keep_unchanged=True)  # unchanged: nothing recompiles (the rule has restat)
    return 0


def _dep_escape(p):
    return p.replace("\\", "/").replace(" ", "\\ ").replace("$", "$$")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
