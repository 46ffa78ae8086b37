nft add rule ip filter FORWARD iifname "wt0" accept
nft add rule ip filter FORWARD oifname "wt0" ct state established,related accept
nft add rule ip6 filter FORWARD iifname "wt0" accept
nft add rule ip6 filter FORWARD oifname "wt0" ct state established,related accept
