package transport

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// checkSubscribeTimeout bounds Config.CheckSubscribe (mcp-go gives the
// session no context).
const checkSubscribeTimeout = 10 * time.Second

// resourceSubs lets Config.CheckSubscribe refuse a resources/subscribe:
// mcp-go then answers with RESOURCE_NOT_FOUND (-32002) and the refusal's
// text. The subscriptions themselves are kept by the Config's owner
// (package mcp, through mcp-go's subscribe hooks), not here.
type resourceSubs struct {
	sess  server.ClientSession
	check func(ctx context.Context, sess server.ClientSession, uri string) error
}

func (r *resourceSubs) SubscribeToResourceErr(uri string) error {
	if r.check == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), checkSubscribeTimeout)
	defer cancel()
	return r.check(ctx, r.sess, uri)
}

func (r *resourceSubs) SubscribeToResource(string)         {}
func (r *resourceSubs) UnsubscribeFromResource(string)     {}
func (r *resourceSubs) SubscribedResources() []string      { return nil }
func (r *resourceSubs) IsSubscribedToResource(string) bool { return false }

var (
	_ server.SessionWithResourceSubscriptionsErr = (*stdioSession)(nil)
	_ server.SessionWithResourceSubscriptionsErr = (*httpSession)(nil)
)
