// veriforge CPU runtime: the fiber context switch for x86-64 System V.
// A CUDA thread that reaches a barrier or warp collective is parked by saving the callee-saved
// registers on its own stack and loading another stack pointer: ~20 instructions, about ten
// times cheaper than swapcontext (which also saves the signal mask with a system call).
// The MXCSR / x87 control words are not switched: kernels never change rounding modes.
#if defined(__x86_64__)
    .text
    .globl  vf_switch_context
    .type   vf_switch_context, @function
// void vf_switch_context(void** save_sp /* rdi */, void* to_sp /* rsi */)
vf_switch_context:
    .cfi_startproc
    pushq   %rbp
    pushq   %rbx
    pushq   %r12
    pushq   %r13
    pushq   %r14
    pushq   %r15
    movq    %rsp, (%rdi)
    movq    %rsi, %rsp
    popq    %r15
    popq    %r14
    popq    %r13
    popq    %r12
    popq    %rbx
    popq    %rbp
    ret
    .cfi_endproc
    .size   vf_switch_context, .-vf_switch_context

    .globl  vf_fiber_trampoline
    .type   vf_fiber_trampoline, @function
// First "return" target of a fresh fiber: r12 = argument, r13 = entry function (never returns).
vf_fiber_trampoline:
    .cfi_startproc
    .cfi_undefined rip
    movq    %r12, %rdi
    callq   *%r13
    ud2
    .cfi_endproc
    .size   vf_fiber_trampoline, .-vf_fiber_trampoline
#endif
    .section .note.GNU-stack,"",@progbits
