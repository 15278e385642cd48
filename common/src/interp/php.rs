//! PHP's offset slots ([`super::InterpProcess::offsets`]). `state_address` is
//! `&executor_globals.current_execute_data` (a non-ZTS build: the CLI).

/// `zend_execute_data.opline`.
pub const EX_OPLINE: usize = 0;
/// `zend_execute_data.func`.
pub const EX_FUNC: usize = 1;
/// `zend_execute_data.This.u1.type_info` (the call info).
pub const EX_CALL_INFO: usize = 2;
/// `zend_execute_data.prev_execute_data`.
pub const EX_PREVIOUS: usize = 3;
/// `zend_op.lineno`.
pub const OP_LINENO: usize = 4;
/// `zend_function.type` (a byte).
pub const FUNC_TYPE: usize = 5;
/// `ZEND_USER_FUNCTION` (`ZEND_INTERNAL_FUNCTION` is 1: run natively, kept native).
pub const USER_FUNCTION: u8 = 2;
/// `ZEND_EVAL_CODE`.
pub const EVAL_CODE: u8 = 4;
/// `ZEND_CALL_TOP` in the call info: the frame an `execute_ex` call started with.
pub const CALL_TOP: u32 = 1 << 17;
