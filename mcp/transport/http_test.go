package transport

import (
	"errors"
	"testing"
)

func TestResolveListenAddr(t *testing.T) {
	t.Parallel()
	cases := []struct {
		p    ListenParams
		want string
		err  bool
	}{
		{ListenParams{Addr: ":8765", HTTPOptions: HTTPOptions{NoAuth: true}}, "127.0.0.1:8765", false},
		{ListenParams{Addr: "127.0.0.1:0", HTTPOptions: HTTPOptions{NoAuth: true}}, "127.0.0.1:0", false},
		{ListenParams{Addr: "127.0.0.1:0"}, "", true}, // no token, no NoAuth
		{ListenParams{Addr: "127.0.0.1:0", HTTPOptions: HTTPOptions{Tokens: map[string]string{"a": "x"}}}, "127.0.0.1:0", false},
		{ListenParams{Addr: "localhost:80", HTTPOptions: HTTPOptions{NoAuth: true}}, "localhost:80", false},
		{ListenParams{Addr: "[::1]:80", HTTPOptions: HTTPOptions{NoAuth: true}}, "[::1]:80", false},
		{ListenParams{Addr: "0.0.0.0:80", AllowRemote: true, HTTPOptions: HTTPOptions{NoAuth: true}}, "", true},
		{ListenParams{Addr: "0.0.0.0:80"}, "", true},
		{ListenParams{Addr: "0.0.0.0:80", AllowRemote: true}, "", true},
		{ListenParams{Addr: "0.0.0.0:80", AllowRemote: true, HTTPOptions: HTTPOptions{Token: "t"}}, "0.0.0.0:80", false},
		{ListenParams{Addr: "8765"}, "", true},
	}
	for _, c := range cases {
		got, err := ResolveListenAddr(c.p)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("ResolveListenAddr(%+v) = %q, %v", c.p, got, err)
		}
		if c.p.Addr == "127.0.0.1:0" && !c.p.NoAuth && len(c.p.Tokens) == 0 && !errors.Is(err, ErrNoToken) {
			t.Errorf("no-token error %v should wrap ErrNoToken", err)
		}
		if c.p.Addr == "0.0.0.0:80" && !c.p.AllowRemote && !errors.Is(err, ErrRemoteAddr) {
			t.Errorf("remote address error %v should wrap ErrRemoteAddr", err)
		}
	}
}
