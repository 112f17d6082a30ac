package authority

import "context"

// AuthorizerFunc adapts a function to Authorizer, for tests: production
// links are types of their own (deadcode found no other caller).
type AuthorizerFunc func(ctx context.Context, r Request, q Querier) (Verdict, string, error)

func (f AuthorizerFunc) Review(ctx context.Context, r Request, q Querier) (Verdict, string, error) {
	return f(ctx, r, q)
}
