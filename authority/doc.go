// Package authority owns permwrap's live authority: what happens after the
// engine answers "ask". It holds the authorizer chain (configured links
// that allow, deny or defer, then a terminal that can only allow or deny),
// the delegation envelope that bounds what links may grant, decision
// provenance (every Decision names who decided it), request ids, the
// terminal prompt and its renderer, and the review log.
//
// Nothing here touches the kernel. The supervisor hands this package a
// Request for every ask and a Screen for the prompt; it gets back a
// Decision and writes it to the Log.
package authority
