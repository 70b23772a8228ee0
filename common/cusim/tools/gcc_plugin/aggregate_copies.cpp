// cusim's GCC plugin for analysis builds: makes every struct copied between memory and a call
// visible to ThreadSanitizer's instrumentation, on which cusim's analysis rests.
//
// GCC's ThreadSanitizer pass instruments loads and stores in assignments, but not a struct read
// from memory straight into a by-value call argument (`combine(a, partial[lane])`,
// `f(cond ? partial[i] : identity)`) nor a struct result stored straight from a call into memory
// (`out[i] = make_pair(...)`, `partial[w] = reduce(v)`): GIMPLE keeps those memory operands in the
// call itself. Without this plugin cusim never sees such accesses: no memcheck, racecheck or
// initcheck report for them and no bytes counted in the metrics. The pass runs just before the
// ThreadSanitizer passes ("tsan", and "tsan0" at -O0) and rewrites
//
//     call(..., MEM, ...)      into   tmp = MEM;  call(..., tmp, ...)
//     MEM = call(...)          into   tmp = call(...);  MEM = tmp
//
// so that the copies are ordinary assignments, which the ThreadSanitizer pass instruments. tmp is
// a local the instrumentation leaves alone. Nothing changes in builds without -fsanitize=thread.
// GCC's plugin headers must come in this order (gcc-plugin.h first; ssa.h brings the SSA headers
// in theirs).
#include <gcc-plugin.h>
#include <plugin-version.h>
#include <tree.h>
#include <tree-pass.h>
#include <context.h>
#include <function.h>
#include <basic-block.h>
#include <tree-ssa-alias.h>
#include <gimple-expr.h>
#include <gimple.h>
#include <gimple-iterator.h>
#include <gimplify.h>
#include <ssa.h>
#include <tree-eh.h>
#include <tree-into-ssa.h>
#include <diagnostic-core.h>

int plugin_is_GPL_compatible;

namespace {

const pass_data kPassData = {
    GIMPLE_PASS,
    "cusim_aggregate_copies",  // name (-fdump-tree-cusim_aggregate_copies)
    OPTGROUP_NONE,
    TV_NONE,
    PROP_gimple_any,  // properties required
    0,                // properties provided
    0,                // properties destroyed
    0,                // todo flags start
    0,                // todo flags finish (set in execute)
};

// A struct (or array) operand that lives in memory other than a plain local: what ThreadSanitizer
// would instrument in an assignment.
bool memory_aggregate(tree t) {
  if (t == NULL_TREE) return false;
  const tree type = TREE_TYPE(t);
  if (type == NULL_TREE || is_gimple_reg_type(type)) return false;  // scalars and vectors: registers
  if (TREE_ADDRESSABLE(type)) return false;  // C++ types copied by constructor: passed by reference
  if (!COMPLETE_TYPE_P(type) || integer_zerop(TYPE_SIZE_UNIT(type))) return false;
  switch (TREE_CODE(t)) {
    case MEM_REF:
    case TARGET_MEM_REF:
    case ARRAY_REF:
    case ARRAY_RANGE_REF:
    case COMPONENT_REF:
      return true;
    case VAR_DECL:
      return is_global_var(t);
    default:
      return false;
  }
}

struct AggregateCopies : gimple_opt_pass {
  explicit AggregateCopies(gcc::context* ctx) : gimple_opt_pass(kPassData, ctx) {}
  opt_pass* clone() override { return new AggregateCopies(m_ctxt); }
  bool gate(function*) override { return (flag_sanitize & SANITIZE_THREAD) != 0; }

  unsigned int execute(function* fun) override {
    bool changed = false;
    basic_block bb;
    FOR_EACH_BB_FN(bb, fun) {
      for (gimple_stmt_iterator gsi = gsi_start_bb(bb); !gsi_end_p(gsi); gsi_next(&gsi)) {
        gcall* call = dyn_cast<gcall*>(gsi_stmt(gsi));
        if (call == nullptr) continue;
        const location_t where = gimple_location(call);
        for (unsigned i = 0; i < gimple_call_num_args(call); ++i) {
          const tree arg = gimple_call_arg(call, i);
          if (!memory_aggregate(arg)) continue;
          const tree tmp = create_tmp_var(TREE_TYPE(arg), "cusim_arg");
          gimple* copy = gimple_build_assign(tmp, unshare_expr(arg));
          gimple_set_location(copy, where);
          gsi_insert_before(&gsi, copy, GSI_SAME_STMT);
          gimple_call_set_arg(call, i, tmp);
          changed = true;
        }
        const tree lhs = gimple_call_lhs(call);
        if (memory_aggregate(lhs) && !gimple_call_noreturn_p(call) && !stmt_can_throw_internal(fun, call)) {
          const tree tmp = create_tmp_var(TREE_TYPE(lhs), "cusim_ret");
          gimple_call_set_lhs(call, tmp);
          gimple* copy = gimple_build_assign(lhs, tmp);
          gimple_set_location(copy, where);
          gsi_insert_after(&gsi, copy, GSI_SAME_STMT);  // the iterator stays on the call
          changed = true;
        }
      }
    }
    if (!changed) return 0;
    if (gimple_in_ssa_p(fun)) {
      mark_virtual_operands_for_renaming(fun);
      return TODO_update_ssa_only_virtuals;
    }
    return 0;
  }
};

void register_before(const char* plugin, const char* pass_name) {
  register_pass_info info;
  info.pass = new AggregateCopies(g);
  info.reference_pass_name = pass_name;
  info.ref_pass_instance_number = 0;  // every instance
  info.pos_op = PASS_POS_INSERT_BEFORE;
  register_callback(plugin, PLUGIN_PASS_MANAGER_SETUP, nullptr, &info);
}

}  // namespace

int plugin_init(plugin_name_args* info, plugin_gcc_version* version) {
  if (!plugin_default_version_check(version, &gcc_version)) {
    error("cusim's GCC plugin was built for GCC %s, not this compiler (%s): rebuild it (reconfigure the build)",
          gcc_version.basever, version->basever);
    return 1;
  }
  static plugin_info about = {"1", "cusim: struct copies between memory and calls made visible to -fsanitize=thread"};
  register_callback(info->base_name, PLUGIN_INFO, nullptr, &about);
  register_before(info->base_name, "tsan");
  register_before(info->base_name, "tsan0");
  return 0;
}
