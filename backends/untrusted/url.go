package untrusted

import (
	"net/url"
	"regexp"
)

// secretParam matches the query parameters that carry credentials by
// name: ?api_key=, ?token=, ?access_token=, ?sig= and the like.
var secretParam = regexp.MustCompile(`(?i)(key|token|secret|passw|pwd|auth|sig|credential|session)`)

// urlRedacted stands in for a secret in a URL, as net/url's Redacted
// writes it: it needs no escaping there.
const urlRedacted = "xxxxx"

// URL is an address as it may be shown or stored: a password in it and
// the value of every query parameter named like a credential replaced by
// "xxxxx", then cleaned as a Line. Every URL tokentop shows or writes
// (--url, an arm's url, --server-metrics, --gpu-metrics, a redirect's
// target) goes through it. One that does not parse is not shown at all:
// it could hold a secret where no parser would find it.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an address that does not parse)"
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), urlRedacted)
		}
	}
	if u.RawQuery != "" {
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			u.RawQuery = urlRedacted // a query that does not parse may hide a key anywhere in it
		} else {
			redacted := false
			for k := range q {
				if secretParam.MatchString(k) {
					q[k], redacted = []string{urlRedacted}, true
				}
			}
			if redacted {
				u.RawQuery = q.Encode()
			}
		}
	}
	return Line(u.String())
}
