// SPDX-License-Identifier: GPL-2.0
/*
 * File operations of the node devices: open creates an endpoint, flush
 * ends a listener's accept waiting in the closing process, release closes
 * it, ioctl dispatches (SCIF_REG and later go to the RMA subsystem),
 * poll reports the endpoint's readiness, mmap goes to the RMA subsystem.
 */
#include <linux/fs.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/err.h>
#include "scif_ep.h"

static int scif_fop_open(struct inode *inode, struct file *file)
{
	struct miscdevice *misc = file->private_data;
	struct scif_node *node = container_of(misc, struct scif_node, misc);
	struct scif_file *sf;
	struct scif_endpt *ep;
	struct inode *mi;

	sf = kzalloc(sizeof(*sf), GFP_KERNEL_ACCOUNT);
	if (!sf)
		return -ENOMEM;
	mi = scif_fs_inode_new();
	if (IS_ERR(mi)) {
		kfree(sf);
		return PTR_ERR(mi);
	}
	sf->inode = mi;
	ep = scif_ep_alloc(node);
	if (IS_ERR(ep)) {
		scif_fs_inode_put(sf->inode);
		kfree(sf);
		return PTR_ERR(ep);
	}
	sf->ep = ep;
	file->private_data = sf;
	/* mappings of this file live in our own address_space (scif_fs.c) */
	file->f_mapping = sf->inode->i_mapping;
	return nonseekable_open(inode, file);
}

static int scif_fop_release(struct inode *inode, struct file *file)
{
	struct scif_file *sf = file->private_data;

	scif_ep_close(sf->ep);
	scif_ep_put(sf->ep);
	if (sf->orig) {
		scif_ep_close(sf->orig);
		scif_ep_put(sf->orig);
	}
	scif_fs_inode_put(sf->inode);
	kfree(sf);
	return 0;
}

/*
 * Every close(2) of a descriptor of the file, before the last one's
 * release.  An accept waiting on a listener holds the file, so without
 * this a close in another thread would neither end the accept nor the
 * listener.  As in the Linux 5.9 driver, a close by the process whose
 * thread waits (its files table, @id) wakes the wait, which returns
 * -EINTR; once the accept is out, the last close's release ends the
 * listener.  A close in another process (a forked child's copy) does not.
 */
static int scif_fop_flush(struct file *file, fl_owner_t id)
{
	struct scif_file *sf = file->private_data;
	struct scif_endpt *ep = READ_ONCE(sf->ep);
	bool wake = false;

	spin_lock(&ep->lock);
	if (ep->state == SCIFEP_LISTENING && ep->acc_files == id) {
		WRITE_ONCE(ep->acc_flushes, ep->acc_flushes + 1);
		wake = true;
	}
	spin_unlock(&ep->lock);
	if (wake)
		wake_up_all(&ep->wq);
	return 0;
}

/*
 * The port is read as an int but only its low 16 bits count, as in the
 * Linux 5.9 driver: MPSS libscif passes the address of a 16-bit variable,
 * so the upper half is whatever the caller's stack held.
 */
static long scif_ioctl_bind(struct scif_endpt *ep, int __user *argp)
{
	int pn, port;

	if (get_user(pn, argp))
		return -EFAULT;
	mutex_lock(&ep->mutex);
	port = scif_port_bind(ep, (u16)pn);
	mutex_unlock(&ep->mutex);
	if (port < 0)
		return port;
	if (put_user(port, argp)) {
		scif_port_unbind_if(ep, port);
		return -EFAULT;
	}
	return 0;
}

static long scif_ioctl_connect(struct scif_endpt *ep, struct file *file,
			       struct scifioctl_connect __user *argp)
{
	struct scifioctl_connect req;
	long ret;

	if (copy_from_user(&req, argp, sizeof(req)))
		return -EFAULT;
	ret = scif_connect(ep, &req, file->f_flags & O_NONBLOCK);
	if ((!ret || ret == -EINPROGRESS) &&
	    copy_to_user(&argp->self, &req.self, sizeof(req.self)))
		return -EFAULT;
	return ret;
}

static long scif_ioctl_acceptreq(struct scif_endpt *ep,
				 struct scifioctl_accept __user *argp)
{
	struct scifioctl_accept acc;
	long ret;

	if (copy_from_user(&acc, argp, sizeof(acc)))
		return -EFAULT;
	ret = scif_accept_req(ep, &acc);
	if (ret)
		return ret;
	if (copy_to_user(argp, &acc, sizeof(acc))) {
		/* nobody can register it: undo, the connector sees a reset */
		scif_accept_drop(acc.endpt);
		return -EFAULT;
	}
	return 0;
}

static long scif_ioctl_msg(struct scif_endpt *ep, unsigned int cmd,
			   struct scifioctl_msg __user *argp)
{
	struct scifioctl_msg m;
	long ret;

	if (copy_from_user(&m, argp, sizeof(m)))
		return -EFAULT;
	if (cmd == SCIF_SEND)
		ret = scif_send(ep, &m);
	else
		ret = scif_recv(ep, &m);
	if (put_user(m.out_len, &argp->out_len))
		return -EFAULT;
	return ret;
}

static long scif_ioctl_nodeids(struct scif_endpt *ep,
			       struct scifioctl_node_ids __user *argp)
{
	struct scifioctl_node_ids ids;
	long ret;

	if (copy_from_user(&ids, argp, sizeof(ids)))
		return -EFAULT;
	ret = scif_get_nodeids(ep, &ids);
	if (ret)
		return ret;
	if (put_user(ids.len, &argp->len))
		return -EFAULT;
	return 0;
}

static long scif_fop_ioctl(struct file *file, unsigned int cmd,
			   unsigned long arg)
{
	struct scif_file *sf = file->private_data;
	struct scif_endpt *ep = READ_ONCE(sf->ep);
	void __user *argp = (void __user *)arg;
	u64 handle;

	switch (cmd) {
	case SCIF_BIND:
		return scif_ioctl_bind(ep, argp);
	case SCIF_LISTEN:
		return scif_listen(ep, (int)arg);
	case SCIF_CONNECT:
		return scif_ioctl_connect(ep, file, argp);
	case SCIF_ACCEPTREQ:
		return scif_ioctl_acceptreq(ep, argp);
	case SCIF_ACCEPTREG:
		if (get_user(handle, (u64 __user *)argp))
			return -EFAULT;
		return scif_accept_reg(sf, handle);
	case SCIF_SEND:
	case SCIF_RECV:
		return scif_ioctl_msg(ep, cmd, argp);
	case SCIF_GET_NODEIDS:
		return scif_ioctl_nodeids(ep, argp);
	case SCIF_GET_VERSION:
		return put_user((__s32)SCIF_ABI_VERSION, (__s32 __user *)argp);
	case SCIF_REG:
	case SCIF_UNREG:
	case SCIF_READFROM:
	case SCIF_WRITETO:
	case SCIF_VREADFROM:
	case SCIF_VWRITETO:
	case SCIF_FENCE_MARK:
	case SCIF_FENCE_WAIT:
	case SCIF_FENCE_SIGNAL:
		return scif_rma_ioctl(ep, cmd, arg);
	default:
		return -ENOTTY;
	}
}

static __poll_t scif_fop_poll(struct file *file, poll_table *wait)
{
	struct scif_file *sf = file->private_data;
	struct scif_endpt *ep = READ_ONCE(sf->ep);
	__poll_t mask = 0;

	poll_wait(file, &ep->wq, wait);
	spin_lock(&ep->lock);
	switch (ep->state) {
	case SCIFEP_LISTENING:
		if (!list_empty(&ep->pending))
			mask |= EPOLLIN | EPOLLRDNORM;
		if (!READ_ONCE(ep->node->online))
			mask |= EPOLLERR;
		break;
	case SCIFEP_CONNECTED:
		if (scif_ring_used(&ep->rx))
			mask |= EPOLLIN | EPOLLRDNORM;
		if (ep->peer && scif_ring_space(&ep->peer->rx))
			mask |= EPOLLOUT | EPOLLWRNORM;
		break;
	case SCIFEP_DISCONNECTED:
		/* recv returns: queued bytes first, then the error */
		mask |= EPOLLIN | EPOLLRDNORM | EPOLLHUP;
		if (ep->disc_err == -ENODEV)
			mask |= EPOLLERR;
		break;
	case SCIFEP_UNBOUND:
	case SCIFEP_BOUND:
		if (ep->conn_err)
			mask |= EPOLLERR;
		break;
	case SCIFEP_CLOSED:
		mask |= EPOLLHUP;
		break;
	case SCIFEP_CONNECTING:
		break;
	}
	spin_unlock(&ep->lock);
	return mask;
}

static int scif_fop_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct scif_file *sf = file->private_data;

	return scif_rma_mmap(READ_ONCE(sf->ep), vma);
}

const struct file_operations scif_fops = {
	.owner = THIS_MODULE,
	.open = scif_fop_open,
	.flush = scif_fop_flush,
	.release = scif_fop_release,
	.unlocked_ioctl = scif_fop_ioctl,
	.poll = scif_fop_poll,
	.mmap = scif_fop_mmap,
	.llseek = noop_llseek,
};
