// Package terminal owns the person's terminal while a command runs under
// permwrap.
//
// It holds:
//   - the relay (Relay): the command runs on a pseudo-terminal whose
//     output and input permwrap copies, so that a prompt can pause the
//     agent's output, borrow the screen (authority.Screen) and give it
//     back with the agent's modes restored;
//   - escape tracking (termState, termstate.go): a small VT parser that
//     follows what the agent's output does to the terminal (alternate
//     screen, private modes, keyboard protocols, scrolling region, whether
//     it draws frames or writes lines);
//   - notice placement: permwrap's one-line notices (Noticer, rate-limited)
//     are shown at once only where they cannot land inside the agent's
//     frame, held for a safe moment otherwise, shown on the prompt's
//     screen (authority.NoticeHolder) and summed up at exit.
//
// It does not own what a notice says (the denial lines are the
// supervisor's), the prompt itself (authority draws it on the screen the
// relay lends), how the command is attached to the pty (the watchdog's
// session and controlling terminal, supervisor), or signals: the
// supervisor calls Resize on SIGWINCH. System calls go through
// notify/host; the package does not import supervisor.
package terminal
