package toolgate

import "context"

// callerSessionKey keys the session a built-in tool runs on behalf of.
type callerSessionKey struct{}

// WithCallerSession returns ctx saying that a built-in tool runs on behalf
// of a session (a run its token started), not of the agent key: tools that
// read the gateway's state show that session only its own.
func WithCallerSession(ctx context.Context, sessionID string) context.Context {
	return context.WithValue(ctx, callerSessionKey{}, sessionID)
}

// CallerSession returns the session a built-in tool runs on behalf of,
// empty for the agent key.
func CallerSession(ctx context.Context) string {
	sid, _ := ctx.Value(callerSessionKey{}).(string)
	return sid
}

// callerAddressKey keys the client address a run was started from.
type callerAddressKey struct{}

// WithCallerAddress returns ctx saying from which client address (the
// key the HTTP layer limits addresses by) the session a built-in tool
// runs on behalf of started its run, so that tools sharing a bounded
// resource (the sandbox's slots) can share it per address as well as per
// session.
func WithCallerAddress(ctx context.Context, address string) context.Context {
	return context.WithValue(ctx, callerAddressKey{}, address)
}

// CallerAddress returns the client address set by WithCallerAddress,
// empty when unknown or for the agent key.
func CallerAddress(ctx context.Context) string {
	addr, _ := ctx.Value(callerAddressKey{}).(string)
	return addr
}
