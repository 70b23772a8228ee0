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
#include <gimplify-me.h>
#include <ssa.h>
#include <tree-eh.h>
#include <tree-into-ssa.h>
#include <stringpool.h>
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

// ---- Vector accesses ------------------------------------------------------------------------------
//
// A GPU moves a float4 (int4, uint2, double2, __half2, any struct whose alignment equals its size,
// up to 16 bytes) with ONE access of its width, which faults with "misaligned address" when the
// address is not a multiple of that width. The host compiler splits such a copy into its fields
// (scalar replacement of aggregates runs long before ThreadSanitizer's pass), each naturally
// aligned on its own, so ThreadSanitizer's hooks alone can neither see the vector's width nor its
// misalignment. This pass runs right after the CFG is built, before any of those optimizations, and
// puts
//
//     __cusim_vector_access(&REF, size, is_write);
//
// in front of every statement that loads or stores such a type through memory (REF not a local
// variable): `v = p[i]`, `p[i] = v`, `*q = *p`, `p[i] = make_float4(...)` (the call's result),
// `f(p[i])` (a by-value argument). cusim's runtime checks the alignment there, counts the access
// as one request of its width, and lets the field accesses that follow pass uncounted.

const pass_data kVectorPassData = {
    GIMPLE_PASS,
    "cusim_vector_accesses",  // name (-fdump-tree-cusim_vector_accesses)
    OPTGROUP_NONE,
    TV_NONE,
    PROP_cfg,  // properties required
    0, 0, 0, 0,
};

// A type the GPU moves in one access: a struct or union whose alignment equals its size of 2, 4,
// 8 or 16 bytes (CUDA's vector types are declared __align__(sizeof)).
bool vector_type(tree type) {
  if (type == NULL_TREE || (TREE_CODE(type) != RECORD_TYPE && TREE_CODE(type) != UNION_TYPE)) return false;
  if (!COMPLETE_TYPE_P(type) || !tree_fits_uhwi_p(TYPE_SIZE_UNIT(type))) return false;
  const unsigned HOST_WIDE_INT size = tree_to_uhwi(TYPE_SIZE_UNIT(type));
  if (size != 2 && size != 4 && size != 8 && size != 16) return false;
  return TYPE_ALIGN_UNIT(type) == size;
}

// A reference to memory that is not a plain local variable (a local's accesses are the thread's own
// stack, which cusim does not analyse), whose type is a vector type.
bool vector_memory_ref(tree t) {
  if (t == NULL_TREE || !vector_type(TREE_TYPE(t))) return false;
  switch (TREE_CODE(t)) {
    case MEM_REF:
    case TARGET_MEM_REF:
    case ARRAY_REF:
    case COMPONENT_REF:
    case VAR_DECL:
      break;
    default:
      return false;
  }
  const tree base = get_base_address(t);
  if (base == NULL_TREE) return false;
  if (DECL_P(base) && !is_global_var(base)) return false;
  if (TREE_CODE(base) == MEM_REF && TREE_CODE(TREE_OPERAND(base, 0)) == ADDR_EXPR) {
    const tree decl = TREE_OPERAND(TREE_OPERAND(base, 0), 0);
    if (DECL_P(decl) && !is_global_var(decl)) return false;
  }
  if (TREE_THIS_VOLATILE(t)) return false;  // volatile accesses keep their own instrumentation
  return true;
}

tree vector_access_decl() {
  static tree decl = NULL_TREE;
  if (decl == NULL_TREE) {
    const tree type = build_function_type_list(void_type_node, ptr_type_node, long_unsigned_type_node,
                                               integer_type_node, NULL_TREE);
    decl = build_fn_decl("__cusim_vector_access", type);
    TREE_NOTHROW(decl) = 1;
    DECL_ATTRIBUTES(decl) = tree_cons(get_identifier("leaf"), NULL_TREE, DECL_ATTRIBUTES(decl));
    TREE_PUBLIC(decl) = 1;
    DECL_EXTERNAL(decl) = 1;
    DECL_ARTIFICIAL(decl) = 1;
  }
  return decl;
}

void insert_vector_access(gimple_stmt_iterator* gsi, tree ref, bool write, location_t where) {
  const tree addr = force_gimple_operand_gsi(gsi, build_fold_addr_expr(unshare_expr(ref)), true, NULL_TREE, true,
                                             GSI_SAME_STMT);
  const tree size = build_int_cst(long_unsigned_type_node, tree_to_uhwi(TYPE_SIZE_UNIT(TREE_TYPE(ref))));
  gcall* call = gimple_build_call(vector_access_decl(), 3, addr, size, build_int_cst(integer_type_node, write));
  gimple_set_location(call, where);
  gsi_insert_before(gsi, call, GSI_SAME_STMT);
}

struct VectorAccesses : gimple_opt_pass {
  explicit VectorAccesses(gcc::context* ctx) : gimple_opt_pass(kVectorPassData, ctx) {}
  opt_pass* clone() override { return new VectorAccesses(m_ctxt); }
  bool gate(function*) override { return (flag_sanitize & SANITIZE_THREAD) != 0; }

  unsigned int execute(function* fun) override {
    bool changed = false;
    basic_block bb;
    FOR_EACH_BB_FN(bb, fun) {
      for (gimple_stmt_iterator gsi = gsi_start_bb(bb); !gsi_end_p(gsi); gsi_next(&gsi)) {
        gimple* stmt = gsi_stmt(gsi);
        const location_t where = gimple_location(stmt);
        if (gimple_assign_single_p(stmt)) {
          if (vector_memory_ref(gimple_assign_rhs1(stmt))) {
            insert_vector_access(&gsi, gimple_assign_rhs1(stmt), false, where);
            changed = true;
          }
          if (vector_memory_ref(gimple_assign_lhs(stmt))) {
            insert_vector_access(&gsi, gimple_assign_lhs(stmt), true, where);
            changed = true;
          }
        } else if (gcall* call = dyn_cast<gcall*>(stmt)) {
          for (unsigned i = 0; i < gimple_call_num_args(call); ++i) {
            if (vector_memory_ref(gimple_call_arg(call, i))) {
              insert_vector_access(&gsi, gimple_call_arg(call, i), false, where);
              changed = true;
            }
          }
          if (vector_memory_ref(gimple_call_lhs(call))) {
            insert_vector_access(&gsi, gimple_call_lhs(call), true, where);
            changed = true;
          }
        }
      }
    }
    if (changed && gimple_in_ssa_p(fun)) {
      mark_virtual_operands_for_renaming(fun);
      return TODO_update_ssa;
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
  static plugin_info about = {"1", "cusim: struct copies between memory and calls made visible to -fsanitize=thread; vector accesses marked"};
  register_callback(info->base_name, PLUGIN_INFO, nullptr, &about);
  register_before(info->base_name, "tsan");
  register_before(info->base_name, "tsan0");
  register_pass_info vectors;
  vectors.pass = new VectorAccesses(g);
  vectors.reference_pass_name = "cfg";
  vectors.ref_pass_instance_number = 1;
  vectors.pos_op = PASS_POS_INSERT_AFTER;
  register_callback(info->base_name, PLUGIN_PASS_MANAGER_SETUP, nullptr, &vectors);
  return 0;
}
