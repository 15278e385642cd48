//! CRuby's offset slots ([`super::InterpProcess::offsets`]). `state_address` is the GOT slot of
//! `ruby_current_ec`'s TLS module id (its `R_X86_64_DTPMOD64` relocation); the word after it
//! is the variable's offset in the module's block (`R_X86_64_DTPOFF64`). The kernel finds
//! the thread's block through glibc's DTV (`tcbhead_t.dtv` at 8 from the thread pointer,
//! 16-byte `dtv_t` entries), as `__tls_get_addr` does for a module loaded at start-up.

/// `rb_execution_context_t.vm_stack` (the start of the VM stack).
pub const EC_VM_STACK: usize = 0;
/// `rb_execution_context_t.vm_stack_size` (in `VALUE`s).
pub const EC_VM_STACK_SIZE: usize = 1;
/// `rb_execution_context_t.cfp` (the current control frame).
pub const EC_CFP: usize = 2;
/// `rb_control_frame_t.pc`.
pub const CFP_PC: usize = 3;
/// `rb_control_frame_t.iseq`.
pub const CFP_ISEQ: usize = 4;
/// `rb_control_frame_t.ep`.
pub const CFP_EP: usize = 5;
/// `sizeof(rb_control_frame_t)`.
pub const CFP_SIZE: usize = 6;
/// `rb_iseq_t.body`.
pub const ISEQ_BODY: usize = 7;
/// `rb_iseq_constant_body.iseq_encoded`.
pub const BODY_ENCODED: usize = 8;
/// `rb_iseq_constant_body.location.pathobj`.
pub const BODY_PATHOBJ: usize = 9;
/// `rb_iseq_constant_body.location.label`.
pub const BODY_LABEL: usize = 10;
/// `rb_iseq_constant_body.location.first_lineno`.
pub const BODY_FIRST_LINENO: usize = 11;
/// `VM_FRAME_FLAG_FINISH` in `ep[0]`: the frame an `rb_vm_exec` call started with.
pub const FRAME_FLAG_FINISH: u64 = 0x0020;
/// `VM_FRAME_FLAG_CFRAME` in `ep[0]`: a frame that runs no instructions (a C function's,
/// the VM stack's base frame).
pub const FRAME_FLAG_CFRAME: u64 = 0x0080;
/// Glibc x86_64: `tcbhead_t.dtv`'s offset from the thread pointer.
pub const TCB_DTV: u64 = 8;
/// Glibc x86_64: `sizeof(dtv_t)`.
pub const DTV_ENTRY_SIZE: u64 = 16;
