// Package forwarding is permwrap's nesting, all of it: what lets a
// permwrap started inside another one tighten the rules for its own
// subtree without supervising anything itself.
//
// Only one seccomp listener can serve a filter chain, so an inner permwrap
// does not supervise. Its keeper process knocks (an open of KnockPath that
// only a supervising permwrap answers, with a connected socket), registers
// a node — its configuration, which the outer permwrap compiles with its own
// engine — and from then on the outer permwrap (the root) judges every
// notification of that subtree against the whole chain of policies from the
// root to the node, most restrictive wins. Asks from the subtree go to the
// root's own authority chain; the inner runs none. The root streams the
// subtree's review-log records back so the inner's --log gets them.
//
// The package owns both sides:
//
//   - the inner permwrap (inner.go, keeper.go, stage.go): ProbeParent,
//     RunInner (which starts the keeper and reports the command's status),
//     RunKeeper (knocks, registers, reaps the subtree as a child
//     subreaper, writes the --log) and the exec stage's ExecSpec;
//   - the wire (wire.go, validate.go, wireconfig.go): versioned,
//     length-prefixed, size-bounded frames holding JSON messages read
//     tolerantly (unknown fields and message types are ignored, counts and
//     depth are limited), what each message must hold, and the
//     configuration a registration carries;
//   - the registry and chains (registry.go, chain.go): nodes with their
//     compiled policies, Judge and Strictest combining every layer
//     most-restrictive-wins, session approvals scoped to a node's subtree;
//   - the tree (tree.go): which node a process belongs to, found once per
//     process and cached, exact under pid reuse, failing closed where the
//     ancestry cannot be known (Procs abstracts /proc so it is testable);
//   - the server and the client (server.go, client.go): the root's side of
//     a knock's connection, and the inner's;
//   - the root's side (root.go): Root ties the registry, the tree and the
//     server together for the supervisor — which node a thread is in
//     (NodeOf, cached per thread by a pidfd), session rules per node, the
//     inner permwraps' logs, the nesting.* events.
//
// What stays in the supervisor (supervisor/forwarding.go) is what touches
// its own types: placing a request in its node, judging a call by one
// policy (content rules, audit mode) for Strictest to combine, writing
// the review log's records, answering the knock on the seccomp listener
// (a decoded call whose answer is an installed socket), and the exec
// stage's last step, ExecNested, which shares the root's sandbox stage's
// Landlock floor and command look-up. This package does not import the
// supervisor.
//
// docs/nesting.md describes the model, the wire and the failure modes.
package forwarding
